#include "runtime/kv_cache/ring_cache.h"

#include <algorithm>

namespace g4 {

RingKvCache::RingKvCache(int window, int n_kv_heads, int head_dim, Memory& memory)
    : window_(window),
      row_(n_kv_heads * head_dim),
      memory_(&memory),
      k_(memory),
      v_(memory),
      dev_pos_(memory),
      pos_(static_cast<size_t>(window), -1),
      scratch_k_(memory),
      scratch_v_(memory),
      scratch_pos_(memory) {}

void RingKvCache::Reset() {
  std::fill(pos_.begin(), pos_.end(), -1);
  next_pos_ = 0;  // the next Write uploads the emptied positions with its own
}

Status RingKvCache::Allocate() {
  // Zeroed K/V: empty slots are masked by position, but a masked slot must not hold NaN bytes.
  const std::vector<float> zeros(static_cast<size_t>(window_) * row_, 0.0f);
  G4_RETURN_IF_ERROR(k_.Assign(zeros));
  G4_RETURN_IF_ERROR(v_.Assign(zeros));
  return dev_pos_.Assign(pos_);
}

Status RingKvCache::Write(const float* k, const float* v, int32_t first, int64_t n) {
  const size_t entry = static_cast<size_t>(row_) * sizeof(float);
  for (int64_t done = 0; done < n;) {
    const int64_t slot = (first + done) % window_;
    const int64_t run = std::min<int64_t>(n - done, window_ - slot);
    G4_RETURN_IF_ERROR(memory_->Copy(k_.data() + slot * row_, k + done * row_, run * entry));
    G4_RETURN_IF_ERROR(memory_->Copy(v_.data() + slot * row_, v + done * row_, run * entry));
    for (int64_t i = 0; i < run; ++i) pos_[static_cast<size_t>(slot + i)] = first + done + i;
    done += run;
  }
  return dev_pos_.Assign(pos_);
}

StatusOr<KvView> RingKvCache::Update(const float* k, const float* v, const int32_t* pos,
                                     int64_t C) {
  for (int64_t i = 0; i < C; ++i) {
    if (pos[i] != next_pos_ + i) {
      return Internal("sliding KV cache: position " + std::to_string(pos[i]) + " written where " +
                      std::to_string(next_pos_ + i) + " was expected (positions are appended in order)");
    }
  }
  if (k_.size() == 0) G4_RETURN_IF_ERROR(Allocate());
  if (C == 1) {
    G4_RETURN_IF_ERROR(Write(k, v, pos[0], 1));
    ++next_pos_;
    return KvView{k_.data(), v_.data(), dev_pos_.data(), window_};
  }
  const size_t n = static_cast<size_t>(window_ + C);
  const size_t entry = static_cast<size_t>(row_) * sizeof(float);
  G4_RETURN_IF_ERROR(scratch_k_.Allocate(n * row_));
  G4_RETURN_IF_ERROR(scratch_v_.Allocate(n * row_));
  G4_RETURN_IF_ERROR(memory_->Copy(scratch_k_.data(), k_.data(), k_.bytes()));
  G4_RETURN_IF_ERROR(memory_->Copy(scratch_v_.data(), v_.data(), v_.bytes()));
  G4_RETURN_IF_ERROR(memory_->Copy(scratch_k_.data() + window_ * row_, k, C * entry));
  G4_RETURN_IF_ERROR(memory_->Copy(scratch_v_.data() + window_ * row_, v, C * entry));
  std::vector<int32_t> scratch_pos(pos_);
  scratch_pos.insert(scratch_pos.end(), pos, pos + C);
  G4_RETURN_IF_ERROR(scratch_pos_.Assign(scratch_pos));
  // Only the last W entries of the chunk survive in the ring.
  const int64_t skip = std::max<int64_t>(0, C - window_);
  G4_RETURN_IF_ERROR(Write(k + skip * row_, v + skip * row_, pos[skip], C - skip));
  next_pos_ += static_cast<int32_t>(C);
  return KvView{scratch_k_.data(), scratch_v_.data(), scratch_pos_.data(),
                static_cast<int64_t>(n)};
}

}  // namespace g4
