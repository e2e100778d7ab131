// SequenceKvCache: the KV cache of one sequence, shaped by the model's per-layer KvLayout
// (model/causal_lm.h). Only layers that own K/V get storage (Gemma 4 E2B: 15 of 35); KV-shared
// layers read their donor's view inside the forward pass and never write. Sliding layers hold a
// ring of W slots whatever the context; full layers hold an array that grows in blocks up to
// max_context positions.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "model/causal_lm.h"
#include "model/kv_store.h"
#include "runtime/kv_cache/full_cache.h"
#include "runtime/kv_cache/ring_cache.h"

namespace g4 {

// The state of a sequence's cache at one position: the rings' contents (full layers keep every
// position and only need truncating back to it). Made by SequenceKvCache::Snapshot.
class KvSnapshot {
 public:
  int32_t size() const { return size_; }
  size_t bytes() const;

 private:
  friend class SequenceKvCache;
  int32_t size_ = 0;
  std::vector<std::optional<RingKvCache::Snapshot>> rings_;  // per model layer
};

class SequenceKvCache : public KvStore {
 public:
  static constexpr int kDefaultBlockSize = 256;

  // layers: the model's (ModelInfo::layers). max_context: most positions the sequence may hold
  // (callers keep it <= ModelInfo::max_context). memory: where the K/V live, the backend's
  // (Backend::memory()) for the forward pass to accept the cache. dtype: what K/V are stored
  // as (Backend::kv_dtype()). Rings are allocated on their first write, full layers as the
  // sequence grows.
  static StatusOr<std::unique_ptr<SequenceKvCache>> Create(const std::vector<KvLayout>& layers,
                                                           int max_context,
                                                           Memory& memory = HostMemory(),
                                                           KvDtype dtype = KvDtype::kF32,
                                                           int block_size = kDefaultBlockSize);

  Memory& memory() const override { return *memory_; }
  KvDtype kv_dtype() const override { return dtype_; }

  Status Reserve(const int32_t* pos, int64_t C) override;
  StatusOr<KvView> Write(const KvWriter& write, int layer, const float* k, const float* v,
                         const int32_t* dev_pos, int64_t C) override;
  // Also changes when a pool this cache's full layers share grows (another cache's growth or
  // copy-on-write may have moved it).
  uint64_t storage_id() const override;

  int max_context() const { return max_context_; }
  // Positions stored so far (the next position to run).
  int32_t size() const { return size_; }
  // Bytes each new position adds (full layers only), and the bytes the sliding rings hold.
  size_t bytes_per_token() const { return bytes_per_token_; }
  size_t ring_bytes() const { return ring_bytes_; }
  // The most the cache holds: ring_bytes + bytes_per_token * max_context rounded up to whole
  // blocks, since the full layers grow a block at a time (the engine admits by it).
  size_t reserved_bytes() const {
    const size_t blocks = (static_cast<size_t>(max_context_) + block_size_ - 1) / block_size_;
    return ring_bytes_ + bytes_per_token_ * blocks * block_size_;
  }
  // The full layers' bytes in the whole blocks of positions [0, n): what a Clone(n) shares
  // without ever copying (it writes from n on, and copies the block holding n first).
  size_t SharedBytes(int32_t n) const {
    return bytes_per_token_ * (static_cast<size_t>(n) / block_size_) * block_size_;
  }
  int num_cached_layers() const { return num_cached_layers_; }
  // Blocks the full layers have allocated so far (they grow with the sequence) and the bytes
  // held now: the rings plus those blocks. The server's /metrics sums these over sequences.
  size_t num_blocks() const;
  size_t allocated_bytes() const;
  // allocated_bytes() less the full layers' blocks already in `seen`, which gains this cache's
  // (FullKvCache::UnseenBytes): summed over caches that share blocks, each counted once.
  size_t UnseenBytes(KvBlockSet* seen) const;
  // "KV cache: 15 of 35 layers own K/V (12 sliding rings of 512, 3 full); bf16; 3072 B/token; ..."
  std::string Describe() const;
  void Reset();

  // Prefix reuse: the cache as it is now, and back to such a state later (the same cache or
  // one of the same layers, size() >= the snapshot's: the full layers are truncated to it).
  StatusOr<std::unique_ptr<KvSnapshot>> Snapshot() const;
  Status Restore(const KvSnapshot& snapshot);
  // Keeps positions [0, n) where every ring still holds what its window at n sees (n == size(),
  // no sliding layer, or rings that have not wrapped: RingKvCache::CanTruncate); Restore
  // otherwise.
  bool CanTruncate(int32_t n) const;
  Status Truncate(int32_t n);
  // This cache's state at n <= size() for another sequence: one branching from a kept cache
  // that stays kept for the next one. The rings are copies, from `at` (a snapshot of this
  // cache at n) or, without one, truncated (CanTruncate(n)); the full layers share the blocks
  // of positions [0, n) with this cache (FullKvCache::ShareFrom): whichever writes into a
  // shared block first takes a copy of it.
  StatusOr<std::unique_ptr<SequenceKvCache>> Clone(int32_t n,
                                                   const KvSnapshot* at = nullptr) const;
  // Lets a later sequence in this cache hold up to n positions (reserved_bytes() follows).
  void set_max_context(int n);

 private:
  SequenceKvCache() = default;

  std::vector<KvLayout> layouts_;  // as created (Clone)
  Memory* memory_ = &HostMemory();
  KvDtype dtype_ = KvDtype::kF32;
  int max_context_ = 0;
  int32_t size_ = 0;
  mutable uint64_t storage_id_ = NewKvStorageId();
  mutable uint64_t pool_generations_ = 0;  // their sum when storage_id_ was last checked
  int num_layers_ = 0, num_cached_layers_ = 0, num_rings_ = 0;
  int window_ = 0;  // the largest ring, for Describe()
  size_t block_size_ = kDefaultBlockSize;
  size_t bytes_per_token_ = 0, ring_bytes_ = 0;
  // One entry per model layer: a ring, a block cache, or nothing (KV-shared layers).
  std::vector<std::variant<std::monostate, RingKvCache, FullKvCache>> layers_;
};

}  // namespace g4
