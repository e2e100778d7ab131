#include "runtime/kv_cache/ring_cache.h"

#include <algorithm>

namespace g4 {

RingKvCache::RingKvCache(int window, int n_kv_heads, int head_dim, Memory& memory,
                         KvDtype dtype)
    : window_(window),
      row_(n_kv_heads * head_dim),
      memory_(&memory),
      k_(memory, dtype, row_),
      dev_pos_(memory),
      pos_(static_cast<size_t>(window), -1),
      scratch_(memory, dtype, row_),
      scratch_pos_(memory) {}

RingKvCache::Snapshot::Snapshot(const RingKvCache& ring)
    : kv(*ring.memory_, ring.k_.dtype(), ring.row_), dev_pos(*ring.memory_) {}

Status RingKvCache::SaveTo(Snapshot* s) const {
  s->pos = pos_;
  s->next_pos = next_pos_;
  // Slots past next_pos were never written (an unwrapped ring's slot is its position).
  s->entries = entries();
  if (s->entries == 0) return Status();  // restoring it is a Reset
  G4_RETURN_IF_ERROR(s->kv.Allocate(s->entries));
  G4_RETURN_IF_ERROR(s->kv.CopyFrom(k_, s->entries));
  G4_RETURN_IF_ERROR(s->dev_pos.Allocate(static_cast<size_t>(window_)));
  if (upload_pos_) return s->dev_pos.Assign(pos_);  // the device's positions are stale
  return memory_->Copy(s->dev_pos.data(), dev_pos_.data(), static_cast<size_t>(window_) * 4);
}

Status RingKvCache::RestoreFrom(const Snapshot& s) {
  return Load(s.kv, s.entries, &s.dev_pos, s.pos, s.next_pos);
}

Status RingKvCache::CopyFrom(const RingKvCache& src) {
  if (src.window_ != window_ || src.row_ != row_ || src.k_.dtype() != k_.dtype()) {
    return Internal("sliding KV cache: copy between rings of different shapes");
  }
  return Load(src.k_, src.entries(), src.upload_pos_ ? nullptr : &src.dev_pos_, src.pos_,
              src.next_pos_);
}

Status RingKvCache::Load(const KvRows& kv, int32_t entries, const Buffer<int32_t>* dev_pos,
                         const std::vector<int32_t>& pos, int32_t next_pos) {
  if (entries == 0) {
    Reset();
    return Status();
  }
  if (k_.empty()) {
    G4_RETURN_IF_ERROR(k_.Allocate(window_));
    G4_RETURN_IF_ERROR(k_.Zero(entries, window_));  // empty slots must not hold NaN bytes
    G4_RETURN_IF_ERROR(dev_pos_.Allocate(static_cast<size_t>(window_)));
  }
  G4_RETURN_IF_ERROR(k_.CopyFrom(kv, entries));
  pos_ = pos;
  next_pos_ = next_pos;
  upload_pos_ = false;
  if (dev_pos == nullptr) return dev_pos_.Assign(pos_);
  return memory_->Copy(dev_pos_.data(), dev_pos->data(), static_cast<size_t>(window_) * 4);
}

Status RingKvCache::Truncate(int32_t n) {
  if (!CanTruncate(n)) {
    return Internal("sliding KV cache: cannot keep " + std::to_string(n) + " of " +
                    std::to_string(next_pos_) + " positions (the window has moved past them)");
  }
  if (n == next_pos_) return Status();
  for (int32_t& p : pos_) {
    if (p >= n) p = -1;
  }
  next_pos_ = n;
  upload_pos_ = true;  // the next Reserve empties the device's slots too
  return Status();
}

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
  if (k_.empty()) {
    G4_RETURN_IF_ERROR(k_.Allocate(window_));
    G4_RETURN_IF_ERROR(k_.Zero(0, window_));
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
  k_.Target(&a);
  a.pos_cache = dev_pos_.data();
  return a;
}

StatusOr<KvView> RingKvCache::Write(const KvWriter& write, const float* k, const float* v,
                                    const int32_t* dev_pos, int64_t C) {
  if (k_.empty()) return Internal("sliding KV cache: Write before Reserve");
  // In place: one position (its slot held p - W, which the query at p cannot see), or a chunk
  // ending within the first W positions (slot = position until the ring wraps, so its slots were
  // never written). A step's view is the whole ring, the same every step; a chunk's is the
  // ring's first next_pos_ slots. (When every chunk took the gather below, copying the whole
  // ring into a scratch buffer was 18% of a 41-token prefill of the 270M: 15 MB for its 15 f32
  // rings, the scratch's page faults included.)
  if (C == 1 || next_pos_ <= window_) {
    write(Target(k, v, dev_pos, C));
    KvView view{.pos = dev_pos_.data(), .S = C == 1 ? window_ : next_pos_};
    k_.View(&view);
    return view;
  }
  // The ring as it was before the chunk, then the chunk: [W + C] entries.
  const int64_t n = window_ + C;
  G4_RETURN_IF_ERROR(scratch_.Allocate(n));
  G4_RETURN_IF_ERROR(scratch_pos_.Allocate(static_cast<size_t>(n)));
  G4_RETURN_IF_ERROR(scratch_.CopyFrom(k_, window_));
  G4_RETURN_IF_ERROR(memory_->Upload(scratch_pos_.data(), before_.data(), before_.size() * 4));
  if (k_.dtype() == KvDtype::kF32) {
    G4_RETURN_IF_ERROR(scratch_.CopyF32(k, v, C, window_));
    G4_RETURN_IF_ERROR(memory_->Copy(scratch_pos_.data() + window_, dev_pos, C * sizeof(int32_t)));
  } else {  // entry W + i holds position next_pos_ - C + i: slot = position - base
    KvWriteArgs a = Target(k, v, dev_pos, C);
    a.window = 0;
    a.base = next_pos_ - C - window_;
    a.capacity = n;
    scratch_.Target(&a);
    a.pos_cache = scratch_pos_.data();
    write(a);
  }
  // Only the last W entries of the chunk survive in the ring (distinct slots, as KvWrite needs).
  const int64_t skip = std::max<int64_t>(0, C - window_);
  write(Target(k + skip * row_, v + skip * row_, dev_pos + skip, C - skip));
  KvView view{.pos = scratch_pos_.data(), .S = n};
  scratch_.View(&view);
  return view;
}

}  // namespace g4
