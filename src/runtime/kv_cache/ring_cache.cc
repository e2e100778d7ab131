#include "runtime/kv_cache/ring_cache.h"

#include <algorithm>
#include <cstring>

namespace g4 {

RingKvCache::RingKvCache(int window, int n_kv_heads, int head_dim)
    : window_(window), row_(n_kv_heads * head_dim) {
  k_.assign(static_cast<size_t>(window_) * row_, 0.0f);
  v_.assign(k_.size(), 0.0f);
  pos_.assign(static_cast<size_t>(window_), -1);
}

void RingKvCache::Reset() {
  std::fill(pos_.begin(), pos_.end(), -1);
  next_pos_ = 0;
}

void RingKvCache::Write(const float* k, const float* v, int32_t pos) {
  const size_t slot = static_cast<size_t>(pos % window_);
  std::memcpy(&k_[slot * row_], k, row_ * sizeof(float));
  std::memcpy(&v_[slot * row_], v, row_ * sizeof(float));
  pos_[slot] = pos;
}

StatusOr<KvView> RingKvCache::Update(const float* k, const float* v, const int32_t* pos,
                                     int64_t C) {
  for (int64_t i = 0; i < C; ++i) {
    if (pos[i] != next_pos_ + i) {
      return Internal("sliding KV cache: position " + std::to_string(pos[i]) + " written where " +
                      std::to_string(next_pos_ + i) + " was expected (positions are appended in order)");
    }
  }
  if (C == 1) {
    Write(k, v, pos[0]);
    ++next_pos_;
    return KvView{k_.data(), v_.data(), pos_.data(), window_};
  }
  const size_t n = static_cast<size_t>(window_ + C);
  scratch_k_.resize(n * row_);
  scratch_v_.resize(n * row_);
  scratch_pos_.resize(n);
  std::memcpy(scratch_k_.data(), k_.data(), k_.size() * sizeof(float));
  std::memcpy(scratch_v_.data(), v_.data(), v_.size() * sizeof(float));
  std::copy(pos_.begin(), pos_.end(), scratch_pos_.begin());
  std::memcpy(&scratch_k_[static_cast<size_t>(window_) * row_], k, C * row_ * sizeof(float));
  std::memcpy(&scratch_v_[static_cast<size_t>(window_) * row_], v, C * row_ * sizeof(float));
  std::copy(pos, pos + C, scratch_pos_.begin() + window_);
  // Only the last W entries of the chunk survive in the ring.
  for (int64_t i = std::max<int64_t>(0, C - window_); i < C; ++i) {
    Write(k + i * row_, v + i * row_, pos[i]);
  }
  next_pos_ += static_cast<int32_t>(C);
  return KvView{scratch_k_.data(), scratch_v_.data(), scratch_pos_.data(), static_cast<int64_t>(n)};
}

}  // namespace g4
