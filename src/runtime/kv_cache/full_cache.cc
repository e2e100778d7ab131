#include "runtime/kv_cache/full_cache.h"

#include <algorithm>
#include <vector>

namespace g4 {

FullKvCache::FullKvCache(int n_kv_heads, int head_dim, int block_size, int max_positions,
                         Memory& memory, KvDtype dtype)
    : row_(n_kv_heads * head_dim),
      block_size_(block_size),
      max_positions_(max_positions),
      memory_(&memory),
      kv_(memory, dtype, row_),
      pos_(memory) {}

void FullKvCache::Reset() {
  size_ = 0;
  clear_pos_ = capacity_ > 0;  // keeps the array: a recorded step over it stays valid
}

Status FullKvCache::Truncate(int32_t n) {
  if (n < 0 || n > size_) {
    return Internal("full-attention KV cache: truncate to " + std::to_string(n) + " of " +
                    std::to_string(size_) + " positions");
  }
  if (n == size_) return Status();
  if (!clear_pos_) {  // after a Reset the whole array is emptied at the next Reserve anyway
    const std::vector<int32_t> empty(static_cast<size_t>(size_ - n), -1);
    G4_RETURN_IF_ERROR(memory_->Upload(pos_.data() + n, empty.data(), empty.size() * 4));
  }
  size_ = n;
  return Status();
}

Status FullKvCache::Grow(int64_t need) {
  const int64_t blocks_max = (max_positions_ + block_size_ - 1) / block_size_;
  int64_t want = std::max(need, capacity_ + capacity_ / 2);
  want = std::min((want + block_size_ - 1) / block_size_, blocks_max) * block_size_;
  return Reallocate(want, kv_, size_);
}

Status FullKvCache::Reallocate(int64_t capacity, const KvRows& src, int32_t n) {
  KvRows kv(*memory_, kv_.dtype(), row_);
  Buffer<int32_t> pos(*memory_);
  G4_RETURN_IF_ERROR(kv.Allocate(capacity));
  G4_RETURN_IF_ERROR(kv.Zero(n, capacity));
  std::vector<int32_t> p(static_cast<size_t>(capacity), -1);
  for (int32_t i = 0; i < n; ++i) p[static_cast<size_t>(i)] = i;
  G4_RETURN_IF_ERROR(pos.Assign(p));
  G4_RETURN_IF_ERROR(kv.CopyFrom(src, n));
  kv_ = std::move(kv);
  pos_ = std::move(pos);
  capacity_ = capacity;
  size_ = n;
  clear_pos_ = false;
  return Status();
}

Status FullKvCache::CopyFrom(const FullKvCache& src, int32_t n) {
  if (src.row_ != row_ || src.kv_.dtype() != kv_.dtype() || n < 0 || n > src.size_ ||
      n > max_positions_) {
    return Internal("full-attention KV cache: copy of " + std::to_string(n) + " of " +
                    std::to_string(src.size_) +
                    " positions into a cache of another shape or of " +
                    std::to_string(max_positions_));
  }
  if (n == 0) {
    Reset();
    return Status();
  }
  const int64_t blocks = (n + block_size_ - 1) / block_size_;
  return Reallocate(blocks * block_size_, src.kv_, n);
}

Status FullKvCache::Reserve(const int32_t* pos, int64_t C) {
  if (size_ + C > max_positions_) {
    return InvalidArgument("KV cache full: " + std::to_string(size_ + C) +
                           " positions exceed the context of " + std::to_string(max_positions_));
  }
  for (int64_t i = 0; i < C; ++i) {
    if (pos[i] != size_ + i) {
      return Internal("full-attention KV cache: position " + std::to_string(pos[i]) +
                      " written where " + std::to_string(size_ + i) + " was expected");
    }
  }
  if (clear_pos_) {
    const std::vector<int32_t> empty(static_cast<size_t>(capacity_), -1);
    G4_RETURN_IF_ERROR(memory_->Upload(pos_.data(), empty.data(), empty.size() * 4));
    clear_pos_ = false;
  }
  if (size_ + C > capacity_) G4_RETURN_IF_ERROR(Grow(size_ + C));
  size_ += static_cast<int32_t>(C);
  return Status();
}

StatusOr<KvView> FullKvCache::Write(const KvWriter& write, const float* k, const float* v,
                                    const int32_t* dev_pos, int64_t C) {
  if (size_ > capacity_ || capacity_ == 0) {
    return Internal("full-attention KV cache: Write before Reserve");
  }
  KvWriteArgs a;
  a.k = k;
  a.v = v;
  a.pos = dev_pos;
  a.C = C;
  a.row = row_;
  a.window = 0;
  a.capacity = capacity_;
  kv_.Target(&a);
  a.pos_cache = pos_.data();
  write(a);
  KvView view{.pos = pos_.data(), .S = capacity_};
  kv_.View(&view);
  return view;
}

}  // namespace g4
