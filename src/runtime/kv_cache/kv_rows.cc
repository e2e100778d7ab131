#include "runtime/kv_cache/kv_rows.h"

#include <vector>

namespace g4 {

Status KvRows::Allocate(int64_t entries) {
  const size_t n = static_cast<size_t>(entries) * entry_bytes();
  G4_RETURN_IF_ERROR(k_.Allocate(n));
  return v_.Allocate(n);
}

Status KvRows::Zero(int64_t from, int64_t to) {
  if (to <= from) return Status();
  const std::vector<unsigned char> zeros(static_cast<size_t>(to - from) * entry_bytes(), 0);
  const size_t at = static_cast<size_t>(from) * entry_bytes();
  G4_RETURN_IF_ERROR(memory().Upload(k_.data() + at, zeros.data(), zeros.size()));
  return memory().Upload(v_.data() + at, zeros.data(), zeros.size());
}

Status KvRows::CopyFrom(const KvRows& src, int64_t entries, int64_t at) {
  if (entries <= 0) return Status();
  const size_t n = static_cast<size_t>(entries) * entry_bytes();
  const size_t off = static_cast<size_t>(at) * entry_bytes();
  G4_RETURN_IF_ERROR(memory().Copy(k_.data() + off, src.k_.data(), n));
  return memory().Copy(v_.data() + off, src.v_.data(), n);
}

Status KvRows::CopyF32(const float* k, const float* v, int64_t C, int64_t at) {
  if (dtype_ != KvDtype::kF32) return Internal("KV cache: f32 rows copied into a bf16 cache");
  const size_t n = static_cast<size_t>(C) * entry_bytes();
  const size_t off = static_cast<size_t>(at) * entry_bytes();
  G4_RETURN_IF_ERROR(memory().Copy(k_.data() + off, k, n));
  return memory().Copy(v_.data() + off, v, n);
}

void KvRows::Target(KvWriteArgs* a) {
  unsigned char* k = k_.data();
  unsigned char* v = v_.data();
  if (dtype_ == KvDtype::kBF16) {
    a->k_cache16 = reinterpret_cast<uint16_t*>(k);
    a->v_cache16 = reinterpret_cast<uint16_t*>(v);
  } else {
    a->k_cache = reinterpret_cast<float*>(k);
    a->v_cache = reinterpret_cast<float*>(v);
  }
}

void KvRows::View(KvView* view) const {
  if (dtype_ == KvDtype::kBF16) {
    view->k16 = reinterpret_cast<const uint16_t*>(k_.data());
    view->v16 = reinterpret_cast<const uint16_t*>(v_.data());
  } else {
    view->k = reinterpret_cast<const float*>(k_.data());
    view->v = reinterpret_cast<const float*>(v_.data());
  }
}

}  // namespace g4
