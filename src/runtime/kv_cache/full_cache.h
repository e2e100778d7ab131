// FullKvCache: the K/V of one full-attention layer for one sequence, in blocks of `block_size`
// positions of a KvBlockPool (block_pool.h) that a cache branching from this one (prefix reuse)
// shares: position p lives at entry p % block_size of block table[p / block_size], its position
// at pos[p], the cache's own array (-1 past the sequence). Attention reads the blocks in place
// through the table (ops/kv_blocks.h; no per-step gather) over the whole capacity, masking the
// empty tail by position, so a decode step's view only moves when the cache grows or the pool
// moves. The capacity grows in whole blocks, by at least half again (a sequence growing one
// position per step moves O(log n) times), up to max_positions; blocks are also the unit of
// the server's KV metrics. A block another cache holds too is never written: a write into it
// takes a fresh block first, with a copy of the entries this cache still holds there. K/V are
// stored as the cache's KvDtype.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "core/status.h"
#include "model/kv_store.h"
#include "ops/memory.h"
#include "runtime/kv_cache/block_pool.h"

namespace g4 {

// Blocks of KV pools, as (pool, block id): a block counted once over several caches.
using KvBlockSet = std::set<std::pair<const KvBlockPool*, int32_t>>;

class FullKvCache {
 public:
  // A cache with a pool of its own (shared with the caches that ShareFrom it later).
  FullKvCache(int n_kv_heads, int head_dim, int block_size, int max_positions,
              Memory& memory = HostMemory(), KvDtype dtype = KvDtype::kF32);
  ~FullKvCache();
  FullKvCache(FullKvCache&&) noexcept = default;
  FullKvCache& operator=(FullKvCache&&) = delete;

  // The host's part of appending positions pos[0..C) (consecutive, following the last stored
  // one): the order and capacity checks, the growth (new blocks, a new table and position
  // array) and a block of its own wherever the chunk writes into a shared one. See KvStore.
  Status Reserve(const int32_t* pos, int64_t C);
  // After Reserve of the same chunk: stores k, v: [C, nkv, hd] at positions dev_pos[0..C) (all
  // in the cache's Memory) by one `write` call and returns the whole cache (S = capacity).
  StatusOr<KvView> Write(const KvWriter& write, const float* k, const float* v,
                         const int32_t* dev_pos, int64_t C);

  // Keeps positions [0, n) (n <= size()) and empties the rest; the blocks stay (prefix reuse).
  Status Truncate(int32_t n);
  // Makes this (empty) cache of the same shape hold src's first n positions (n <= src.size()):
  // it takes src's pool and holds the blocks of those positions with src (prefix reuse: a
  // sequence branching from a kept cache that stays kept), copying nothing.
  Status ShareFrom(const FullKvCache& src, int32_t n);
  // A later sequence in this cache may hold up to n positions (growth stays in whole blocks).
  void set_max_positions(int n) { max_positions_ = n; }

  int32_t size() const { return size_; }
  int block_size() const { return block_size_; }
  int64_t capacity() const { return capacity_; }
  size_t num_blocks() const { return blocks_.size(); }
  // The blocks this cache holds (shared ones too) and its positions.
  size_t bytes() const {
    return blocks_.size() * pool_->block_bytes() + static_cast<size_t>(capacity_) * 4;
  }
  // bytes() less the blocks already in `seen`, which gains this cache's: summed over several
  // caches, a block they share is counted once.
  size_t UnseenBytes(KvBlockSet* seen) const {
    size_t n = static_cast<size_t>(capacity_) * 4;
    for (const int32_t b : blocks_) {
      if (seen->emplace(pool_.get(), b).second) n += pool_->block_bytes();
    }
    return n;
  }
  // Moves when the cache grows; the pool's array moves when pool_generation() changes.
  const void* storage() const { return pos_.data(); }
  uint64_t pool_generation() const { return pool_->generation(); }
  const KvBlockPool& pool() const { return *pool_; }
  // Empties the cache and keeps its blocks (a recorded step over it stays valid); shared ones
  // are replaced at the next write into them.
  void Reset();

 private:
  Status Grow(int64_t need);
  // New table and position arrays for `capacity` slots, positions [0, size_) filled.
  Status Reshape(int64_t capacity);
  // Blocks of its own for the positions [from, to) about to be written.
  Status OwnBlocks(int64_t from, int64_t to);
  void ReleaseBlocks();

  int row_, block_size_, max_positions_;
  Memory* memory_;
  std::shared_ptr<KvBlockPool> pool_;
  std::vector<int32_t> blocks_;  // the block table on the host: [capacity / block_size]
  Buffer<int32_t> table_;        // the same in memory_, which attention reads
  Buffer<int32_t> pos_;          // [capacity]: 0, 1, ..., size_ - 1, then -1
  int64_t capacity_ = 0;
  int32_t size_ = 0;
  bool clear_pos_ = false;  // after a Reset: the device's positions still say 0..size-1
};

}  // namespace g4
