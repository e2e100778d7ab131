// Paged K/V: a full-attention cache whose storage is in blocks that sequences may share (a
// system prompt's K/V held once for every request that starts with it). Slot s of a view (the
// sequence's position s) keeps its position at pos[s], its own array, and its K/V at entry
// KvEntry(s) of the K/V arrays: block block_table[s / block_size] of block_size entries. A view
// without a table keeps slot s's K/V at entry s. The CUDA kernels call KvEntry on the device too
// (constexpr: nvcc's --expt-relaxed-constexpr), so the rule is written once.
#pragma once

#include <algorithm>
#include <cstdint>

namespace g4 {

// block_table: [slots / block_size] block indices into the K/V arrays, or null.
constexpr int64_t KvEntry(const int32_t* block_table, int32_t block_size, int64_t slot) {
  if (block_table == nullptr) return slot;
  return int64_t{block_table[slot / block_size]} * block_size + slot % block_size;
}

// The K/V entries a view of `slots` slots spans: the slots, or (a host table) up to the end of
// its highest block. What a host copy of a paged view's K/V must hold.
inline int64_t KvEntries(const int32_t* block_table, int32_t block_size, int64_t slots) {
  if (block_table == nullptr) return slots;
  int64_t entries = 0;
  for (int64_t b = 0; b < slots / block_size; ++b) {
    entries = std::max(entries, (int64_t{block_table[b]} + 1) * block_size);
  }
  return entries;
}

}  // namespace g4
