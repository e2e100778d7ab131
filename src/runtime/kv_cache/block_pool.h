// KvBlockPool: the K/V storage of one full-attention layer, in blocks of `block_size` entries
// that the layer's caches hold by reference (ops/kv_blocks.h): a cache branching from a kept one
// (prefix reuse) holds the kept cache's blocks of the shared prefix instead of a copy, so a
// system prompt's K/V exist once however many sequences start with it. A block held by more
// than one cache is read-only: a cache about to write into it takes a block of its own first
// (FullKvCache::Reserve), copying the entries it still needs.
//
// The blocks are one array in a Memory (the KvRows of the layer's dtype), because attention
// reads a block table as indices into one base (ops/attention.h). When no block is free the
// array grows by half again, copying every block, and generation() changes: every view into
// the pool has moved then (SequenceKvCache::storage_id follows it). The pool never shrinks; a
// freed block is reused. Not thread-safe: the caches sharing a pool are used by one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/status.h"
#include "model/kv_store.h"
#include "ops/memory.h"
#include "runtime/kv_cache/kv_rows.h"

namespace g4 {

class KvBlockPool {
 public:
  KvBlockPool(Memory& memory, KvDtype dtype, int64_t row, int block_size)
      : rows_(memory, dtype, row), block_size_(block_size) {}

  // `n` free blocks, zeroed (empty entries are masked by position but must not hold NaN
  // bytes) from entry `filled` on (the caller writes the entries before it: a copy), each
  // with one reference, appended to *out; the array grows (once) to hold them.
  Status Allocate(int64_t n, std::vector<int32_t>* out, int64_t filled = 0);
  void Ref(int32_t block) { ++refs_[static_cast<size_t>(block)]; }
  // Drops a reference; a block no cache holds is free for Allocate.
  void Unref(int32_t block);
  // Whether another cache holds `block` too (a writer must take its own).
  bool shared(int32_t block) const { return refs_[static_cast<size_t>(block)] > 1; }
  // Copies the first `entries` entries of block `from` to block `to`.
  Status CopyBlock(int32_t from, int32_t to, int64_t entries);

  // Points a KvWrite / a view at the array (the block table is the caller's).
  void Target(KvWriteArgs* a) { rows_.Target(a); }
  void View(KvView* v) const { rows_.View(v); }

  KvDtype dtype() const { return rows_.dtype(); }
  // Bytes of one block's K and V.
  size_t block_bytes() const { return 2 * rows_.entry_bytes() * static_cast<size_t>(block_size_); }
  // Blocks in the array, and those some cache holds.
  int64_t capacity() const { return static_cast<int64_t>(refs_.size()); }
  int64_t used() const { return capacity() - static_cast<int64_t>(free_.size()); }
  // Changes whenever the array moves.
  uint64_t generation() const { return generation_; }

 private:
  KvRows rows_;
  int block_size_;
  std::vector<int32_t> refs_;  // per block: the caches holding it
  std::vector<int32_t> free_;  // blocks no cache holds, the lowest last
  uint64_t generation_ = 0;
};

}  // namespace g4
