#include "runtime/kv_cache/kv_cache.h"

#include <algorithm>
#include <cstdio>

namespace g4 {

StatusOr<std::unique_ptr<SequenceKvCache>> SequenceKvCache::Create(
    const std::vector<KvLayout>& layers, int max_context, Memory& memory, KvDtype dtype,
    int block_size) {
  if (max_context <= 0) {
    return InvalidArgument("context " + std::to_string(max_context) + " must be > 0");
  }
  if (block_size <= 0) return InvalidArgument("KV block size must be > 0");
  std::unique_ptr<SequenceKvCache> cache(new SequenceKvCache());
  cache->layouts_ = layers;
  cache->memory_ = &memory;
  cache->dtype_ = dtype;
  cache->block_size_ = static_cast<size_t>(block_size);
  cache->max_context_ = max_context;
  cache->num_layers_ = static_cast<int>(layers.size());
  cache->layers_.resize(layers.size());
  for (const KvLayout& l : layers) {
    if (l.index < 0 || l.index >= cache->num_layers_) {
      return InvalidArgument("KV cache: layer index " + std::to_string(l.index) + " of " +
                             std::to_string(cache->num_layers_));
    }
    if (l.shared()) continue;
    if (l.sliding() && l.window <= 0) {
      return InvalidArgument("KV cache: sliding layer " + std::to_string(l.index) +
                             " has no window");
    }
    if (!KvHeadFits(dtype, l.head_dim)) {
      return InvalidArgument("KV cache: layer " + std::to_string(l.index) + " has head_dim " +
                             std::to_string(l.head_dim) + ", which " + KvDtypeName(dtype) +
                             " K/V cannot store (q8 needs a multiple of 32)");
    }
    ++cache->num_cached_layers_;
    const size_t row_bytes = KvRowBytes(dtype, static_cast<int64_t>(l.n_kv_heads) * l.head_dim) * 2;
    auto& slot = cache->layers_[static_cast<size_t>(l.index)];
    if (l.sliding()) {
      slot.emplace<RingKvCache>(l.window, l.n_kv_heads, l.head_dim, memory, dtype);
      cache->ring_bytes_ += row_bytes * static_cast<size_t>(l.window);
      cache->window_ = std::max(cache->window_, l.window);
      ++cache->num_rings_;
    } else {
      slot.emplace<FullKvCache>(l.n_kv_heads, l.head_dim, block_size, max_context, memory,
                                dtype);
      cache->bytes_per_token_ += row_bytes;
    }
  }
  return cache;
}

Status SequenceKvCache::Reserve(const int32_t* pos, int64_t C) {
  if (C <= 0) return Internal("KV cache: empty chunk");
  if (pos[0] != size_) {
    return Internal("KV cache: position " + std::to_string(pos[0]) + " written where " +
                    std::to_string(size_) + " was expected");
  }
  if (pos[C - 1] >= max_context_) {
    return InvalidArgument("KV cache full: position " + std::to_string(pos[C - 1]) +
                           " is past the context of " + std::to_string(max_context_));
  }
  // Every layer checks the same positions, so the first check fails before any layer changed.
  bool moved = false;
  for (auto& slot : layers_) {
    if (auto* ring = std::get_if<RingKvCache>(&slot)) {
      const void* before = ring->storage();
      G4_RETURN_IF_ERROR(ring->Reserve(pos, C));
      moved |= ring->storage() != before;
    }
    if (auto* full = std::get_if<FullKvCache>(&slot)) {
      const void* before = full->storage();
      G4_RETURN_IF_ERROR(full->Reserve(pos, C));
      moved |= full->storage() != before;
    }
  }
  if (moved) storage_id_ = NewKvStorageId();
  size_ = pos[C - 1] + 1;
  return Status();
}

StatusOr<KvView> SequenceKvCache::Write(const KvWriter& write, int layer, const float* k,
                                        const float* v, const int32_t* dev_pos, int64_t C) {
  if (layer < 0 || layer >= num_layers_) {
    return Internal("KV cache: no layer " + std::to_string(layer));
  }
  auto& slot = layers_[static_cast<size_t>(layer)];
  if (auto* ring = std::get_if<RingKvCache>(&slot)) return ring->Write(write, k, v, dev_pos, C);
  if (auto* full = std::get_if<FullKvCache>(&slot)) return full->Write(write, k, v, dev_pos, C);
  return Internal("KV cache: layer " + std::to_string(layer) + " is KV-shared and owns no cache");
}

uint64_t SequenceKvCache::storage_id() const {
  uint64_t generations = 0;  // each only grows: the sum changes whenever one does
  for (const auto& slot : layers_) {
    if (const auto* full = std::get_if<FullKvCache>(&slot)) generations += full->pool_generation();
  }
  if (generations != pool_generations_) {
    pool_generations_ = generations;
    storage_id_ = NewKvStorageId();
  }
  return storage_id_;
}

std::string SequenceKvCache::Describe() const {
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "KV cache: %d of %d layers own K/V (%d sliding rings of %d slots, %d full); "
                "%s; %zu B/token; rings %.1f MiB; %.1f MiB reserved for a context of %d",
                num_cached_layers_, num_layers_, num_rings_, window_, num_cached_layers_ - num_rings_,
                KvDtypeName(dtype_), bytes_per_token_, ring_bytes_ / 1048576.0, reserved_bytes() / 1048576.0,
                max_context_);
  return buf;
}

size_t SequenceKvCache::num_blocks() const {
  size_t n = 0;
  for (const auto& slot : layers_) {
    if (const auto* blocks = std::get_if<FullKvCache>(&slot)) n += blocks->num_blocks();
  }
  return n;
}

size_t SequenceKvCache::allocated_bytes() const {
  size_t n = ring_bytes_;
  for (const auto& slot : layers_) {
    if (const auto* blocks = std::get_if<FullKvCache>(&slot)) n += blocks->bytes();
  }
  return n;
}

size_t SequenceKvCache::UnseenBytes(KvBlockSet* seen) const {
  size_t n = ring_bytes_;
  for (const auto& slot : layers_) {
    if (const auto* blocks = std::get_if<FullKvCache>(&slot)) n += blocks->UnseenBytes(seen);
  }
  return n;
}

size_t KvSnapshot::bytes() const {
  size_t n = 0;
  for (const auto& r : rings_) n += r ? r->bytes() : 0;
  return n;
}

StatusOr<std::unique_ptr<KvSnapshot>> SequenceKvCache::Snapshot() const {
  auto snap = std::make_unique<KvSnapshot>();
  snap->size_ = size_;
  snap->rings_.resize(layers_.size());
  for (size_t l = 0; l < layers_.size(); ++l) {
    if (const auto* ring = std::get_if<RingKvCache>(&layers_[l])) {
      snap->rings_[l].emplace(*ring);
      G4_RETURN_IF_ERROR(ring->SaveTo(&*snap->rings_[l]));
    }
  }
  return snap;
}

Status SequenceKvCache::Restore(const KvSnapshot& snap) {
  if (snap.size_ > size_ || snap.rings_.size() != layers_.size()) {
    return Internal("KV cache: a snapshot of " + std::to_string(snap.size_) +
                    " positions restored into a cache of " + std::to_string(size_));
  }
  bool moved = false;
  for (size_t l = 0; l < layers_.size(); ++l) {
    if (auto* ring = std::get_if<RingKvCache>(&layers_[l])) {
      if (!snap.rings_[l]) return Internal("KV cache: the snapshot has no ring for this layer");
      const void* before = ring->storage();
      G4_RETURN_IF_ERROR(ring->RestoreFrom(*snap.rings_[l]));
      moved |= ring->storage() != before;
    }
    if (auto* full = std::get_if<FullKvCache>(&layers_[l])) {
      G4_RETURN_IF_ERROR(full->Truncate(snap.size_));
    }
  }
  if (moved) storage_id_ = NewKvStorageId();
  size_ = snap.size_;
  return Status();
}

bool SequenceKvCache::CanTruncate(int32_t n) const {
  if (n < 0 || n > size_) return false;
  for (const auto& slot : layers_) {
    const auto* ring = std::get_if<RingKvCache>(&slot);
    if (ring != nullptr && !ring->CanTruncate(n)) return false;
  }
  return true;
}

Status SequenceKvCache::Truncate(int32_t n) {
  if (n == size_) return Status();
  if (!CanTruncate(n)) {
    return Internal("KV cache: cannot truncate " + std::to_string(size_) + " positions to " +
                    std::to_string(n) + " (a sliding ring has moved past it: use a snapshot)");
  }
  for (auto& slot : layers_) {
    if (auto* ring = std::get_if<RingKvCache>(&slot)) G4_RETURN_IF_ERROR(ring->Truncate(n));
    if (auto* full = std::get_if<FullKvCache>(&slot)) G4_RETURN_IF_ERROR(full->Truncate(n));
  }
  size_ = n;
  return Status();
}

StatusOr<std::unique_ptr<SequenceKvCache>> SequenceKvCache::Clone(int32_t n,
                                                                   const KvSnapshot* at) const {
  if (n < 0 || n > size_ || (at != nullptr ? at->size_ != n : !CanTruncate(n))) {
    return Internal("KV cache: no copy at " + std::to_string(n) + " of " +
                    std::to_string(size_) + " positions" +
                    (at != nullptr ? " from a snapshot of " + std::to_string(at->size_)
                                   : " (a sliding ring has moved past it: use a snapshot)"));
  }
  G4_ASSIGN_OR_RETURN(auto copy, Create(layouts_, max_context_, *memory_, dtype_,
                                        static_cast<int>(block_size_)));
  for (size_t l = 0; l < layers_.size(); ++l) {
    const auto* ring = std::get_if<RingKvCache>(&layers_[l]);
    if (ring != nullptr && at == nullptr) {  // from a snapshot: Restore below
      RingKvCache& dst = std::get<RingKvCache>(copy->layers_[l]);
      G4_RETURN_IF_ERROR(dst.CopyFrom(*ring));
      G4_RETURN_IF_ERROR(dst.Truncate(n));
    }
    if (const auto* full = std::get_if<FullKvCache>(&layers_[l])) {
      G4_RETURN_IF_ERROR(std::get<FullKvCache>(copy->layers_[l]).ShareFrom(*full, n));
    }
  }
  copy->size_ = n;
  if (at != nullptr) G4_RETURN_IF_ERROR(copy->Restore(*at));
  return copy;
}

void SequenceKvCache::set_max_context(int n) {
  max_context_ = n;
  for (auto& slot : layers_) {
    if (auto* full = std::get_if<FullKvCache>(&slot)) full->set_max_positions(n);
  }
}

void SequenceKvCache::Reset() {
  size_ = 0;
  for (auto& slot : layers_) {
    if (auto* ring = std::get_if<RingKvCache>(&slot)) ring->Reset();
    if (auto* blocks = std::get_if<FullKvCache>(&slot)) blocks->Reset();
  }
}

}  // namespace g4
