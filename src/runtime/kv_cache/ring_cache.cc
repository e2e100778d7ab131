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
  next_pos_ = 0;
  upload_pos_ = true;  // the next Reserve empties the device's slots too
}

Status RingKvCache::Reserve(const int32_t* pos, int64_t C) {
  for (int64_t i = 0; i < C; ++i) {
    if (pos[i] != next_pos_ + i) {
      return Internal("sliding KV cache: position " + std::to_string(pos[i]) + " written where " +
                      std::to_string(next_pos_ + i) +
                      " was expected (positions are appended in order)");
    }
  }
  if (k_.size() == 0) {
    // Zeroed K/V: empty slots are masked by position, but a masked slot must not hold NaN bytes.
    const std::vector<float> zeros(static_cast<size_t>(window_) * row_, 0.0f);
    G4_RETURN_IF_ERROR(k_.Assign(zeros));
    G4_RETURN_IF_ERROR(v_.Assign(zeros));
    upload_pos_ = true;
  }
  if (upload_pos_) {
    G4_RETURN_IF_ERROR(dev_pos_.Assign(pos_));
    upload_pos_ = false;
  }
  if (C > 1) before_ = pos_;
  for (int64_t i = 0; i < C; ++i) {
    const int32_t p = pos[i];
    pos_[static_cast<size_t>(p % window_)] = p;
  }
  next_pos_ += static_cast<int32_t>(C);
  return Status();
}

KvWriteArgs RingKvCache::Target(const float* k, const float* v, const int32_t* dev_pos,
                                int64_t C) {
  KvWriteArgs a;
  a.k = k;
  a.v = v;
  a.pos = dev_pos;
  a.C = C;
  a.row = row_;
  a.window = window_;
  a.capacity = window_;
  a.k_cache = k_.data();
  a.v_cache = v_.data();
  a.pos_cache = dev_pos_.data();
  return a;
}

StatusOr<KvView> RingKvCache::Write(const KvWriter& write, const float* k, const float* v,
                                    const int32_t* dev_pos, int64_t C) {
  if (k_.size() == 0) return Internal("sliding KV cache: Write before Reserve");
  if (C == 1) {
    write(Target(k, v, dev_pos, 1));
    return KvView{k_.data(), v_.data(), dev_pos_.data(), window_};
  }
  // The ring as it was before the chunk, then the chunk: [W + C] entries.
  const size_t n = static_cast<size_t>(window_ + C);
  const size_t entry = static_cast<size_t>(row_) * sizeof(float);
  G4_RETURN_IF_ERROR(scratch_k_.Allocate(n * row_));
  G4_RETURN_IF_ERROR(scratch_v_.Allocate(n * row_));
  G4_RETURN_IF_ERROR(scratch_pos_.Allocate(n));
  G4_RETURN_IF_ERROR(memory_->Copy(scratch_k_.data(), k_.data(), k_.bytes()));
  G4_RETURN_IF_ERROR(memory_->Copy(scratch_v_.data(), v_.data(), v_.bytes()));
  G4_RETURN_IF_ERROR(memory_->Copy(scratch_k_.data() + window_ * row_, k, C * entry));
  G4_RETURN_IF_ERROR(memory_->Copy(scratch_v_.data() + window_ * row_, v, C * entry));
  G4_RETURN_IF_ERROR(memory_->Upload(scratch_pos_.data(), before_.data(), before_.size() * 4));
  G4_RETURN_IF_ERROR(memory_->Copy(scratch_pos_.data() + window_, dev_pos, C * sizeof(int32_t)));
  // Only the last W entries of the chunk survive in the ring (distinct slots, as KvWrite needs).
  const int64_t skip = std::max<int64_t>(0, C - window_);
  write(Target(k + skip * row_, v + skip * row_, dev_pos + skip, C - skip));
  return KvView{scratch_k_.data(), scratch_v_.data(), scratch_pos_.data(),
                static_cast<int64_t>(n)};
}

}  // namespace g4
