// Paged K/V: a full-attention cache whose storage is in blocks that sequences may share (a
// system prompt's K/V held once for every request that starts with it). Slot s of a view (the
// sequence's position s) keeps its position at pos[s], its own array, and its K/V at entry
// KvEntry(s) of the K/V arrays: block block_table[s / block_size] of block_size entries. A view
// without a table keeps slot s's K/V at entry s. The CUDA kernels repeat this rule on the
// device (kernels/cuda/kv_write.cuh).
#pragma once

#include <cstdint>

namespace g4 {

// block_table: [slots / block_size] block indices into the K/V arrays, or null.
inline int64_t KvEntry(const int32_t* block_table, int32_t block_size, int64_t slot) {
  if (block_table == nullptr) return slot;
  return int64_t{block_table[slot / block_size]} * block_size + slot % block_size;
}

}  // namespace g4
