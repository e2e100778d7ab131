// FullKvCache: the K/V of one full-attention layer for one sequence: one array in a Memory (a
// GPU's, under the CUDA backend) where position p lives at entry p, next to its position
// (-1 past the sequence). Attention reads it in place (no per-step gather) over its whole
// capacity, masking the empty tail by position, so a decode step's view only moves when the
// array grows. It grows in whole blocks of `block_size` positions, by at least half again (a
// sequence growing one position per step moves O(log n) times), up to max_positions; blocks
// are also the unit of the server's KV metrics. K/V are stored as the cache's KvDtype.
#pragma once

#include <cstdint>

#include "core/status.h"
#include "model/kv_store.h"
#include "ops/memory.h"
#include "runtime/kv_cache/kv_rows.h"

namespace g4 {

class FullKvCache {
 public:
  FullKvCache(int n_kv_heads, int head_dim, int block_size, int max_positions,
              Memory& memory = HostMemory(), KvDtype dtype = KvDtype::kF32);

  // The host's part of appending positions pos[0..C) (consecutive, following the last stored
  // one): the order and capacity checks and the growth, which copies the stored entries to
  // the new array. See KvStore.
  Status Reserve(const int32_t* pos, int64_t C);
  // After Reserve of the same chunk: stores k, v: [C, nkv, hd] at positions dev_pos[0..C) (all
  // in the cache's Memory) by one `write` call and returns the whole array (S = capacity).
  StatusOr<KvView> Write(const KvWriter& write, const float* k, const float* v,
                         const int32_t* dev_pos, int64_t C);

  // Keeps positions [0, n) (n <= size()) and empties the rest; the array stays (prefix reuse).
  Status Truncate(int32_t n);
  // Makes this (empty) cache of the same shape and dtype hold src's first n positions
  // (n <= src.size(); prefix reuse: a sequence branching from a kept cache that stays kept).
  Status CopyFrom(const FullKvCache& src, int32_t n);
  // A later sequence in this cache may hold up to n positions (growth stays in whole blocks).
  void set_max_positions(int n) { max_positions_ = n; }

  int32_t size() const { return size_; }
  int block_size() const { return block_size_; }
  int64_t capacity() const { return capacity_; }
  size_t num_blocks() const { return static_cast<size_t>(capacity_ / block_size_); }
  size_t bytes() const { return static_cast<size_t>(capacity_) * (2 * kv_.entry_bytes() + 4); }
  // Moves when the array grows.
  const void* storage() const { return kv_.storage(); }
  void Reset();

 private:
  Status Grow(int64_t need);
  // A new array of `capacity` entries holding src's first n (src may be this cache's own).
  Status Reallocate(int64_t capacity, const KvRows& src, int32_t n);

  int row_, block_size_, max_positions_;
  Memory* memory_;
  KvRows kv_;               // K and V: [capacity, nkv, hd]
  Buffer<int32_t> pos_;     // [capacity]: 0, 1, ..., size_ - 1, then -1
  int64_t capacity_ = 0;
  int32_t size_ = 0;
  bool clear_pos_ = false;  // after a Reset: the device's positions still say 0..size-1
};

}  // namespace g4
