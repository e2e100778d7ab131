#include "runtime/kv_cache/kv_rows.h"

#include <vector>

#include "core/q8_blocks.h"

namespace g4 {

template <class Self, class P>
int KvRows::PlanesOf(Self& self, P* out) {
  if (self.dtype_ != KvDtype::kQ8) {
    out[0] = {&self.k_, self.entry_bytes()};
    out[1] = {&self.v_, self.entry_bytes()};
    return 2;
  }
  const size_t q = static_cast<size_t>(self.row_);
  const size_t scales = static_cast<size_t>(self.row_ / kQ8Block) * sizeof(float);
  out[0] = {&self.k_, q};
  out[1] = {&self.v_, q};
  out[2] = {&self.ks_, scales};
  out[3] = {&self.vs_, scales};
  return 4;
}

int KvRows::Planes(Plane* out) { return PlanesOf(*this, out); }
int KvRows::Planes(ConstPlane* out) const { return PlanesOf(*this, out); }

Status KvRows::Allocate(int64_t entries) {
  Plane planes[4];
  const int n = Planes(planes);
  for (int i = 0; i < n; ++i) {
    G4_RETURN_IF_ERROR(planes[i].buffer->Allocate(static_cast<size_t>(entries) * planes[i].bytes));
  }
  return Status();
}

Status KvRows::Zero(int64_t from, int64_t to) {
  if (to <= from) return Status();
  Plane planes[4];
  const int n = Planes(planes);
  for (int i = 0; i < n; ++i) {
    const std::vector<unsigned char> zeros(static_cast<size_t>(to - from) * planes[i].bytes, 0);
    const size_t at = static_cast<size_t>(from) * planes[i].bytes;
    G4_RETURN_IF_ERROR(memory().Upload(planes[i].buffer->data() + at, zeros.data(), zeros.size()));
  }
  return Status();
}

Status KvRows::CopyFrom(const KvRows& src, int64_t entries, int64_t at, int64_t from) {
  if (entries <= 0) return Status();
  if (src.dtype_ != dtype_ || src.row_ != row_) {
    return Internal("KV cache: copy between rows of different shapes or dtypes");
  }
  Plane to[4];
  ConstPlane planes[4];  // the source's
  const int n = Planes(to);
  src.Planes(planes);
  for (int i = 0; i < n; ++i) {
    const size_t bytes = static_cast<size_t>(entries) * to[i].bytes;
    const size_t off = static_cast<size_t>(at) * to[i].bytes;
    const size_t src_off = static_cast<size_t>(from) * to[i].bytes;
    G4_RETURN_IF_ERROR(
        memory().Copy(to[i].buffer->data() + off, planes[i].buffer->data() + src_off, bytes));
  }
  return Status();
}

Status KvRows::CopyF32(const float* k, const float* v, int64_t C, int64_t at) {
  if (dtype_ != KvDtype::kF32) {
    return Internal(std::string("KV cache: f32 rows copied into a ") + KvDtypeName(dtype_) +
                    " cache");
  }
  const size_t n = static_cast<size_t>(C) * entry_bytes();
  const size_t off = static_cast<size_t>(at) * entry_bytes();
  G4_RETURN_IF_ERROR(memory().Copy(k_.data() + off, k, n));
  return memory().Copy(v_.data() + off, v, n);
}

void KvRows::Target(KvWriteArgs* a) {
  unsigned char* k = k_.data();
  unsigned char* v = v_.data();
  switch (dtype_) {
    case KvDtype::kBF16:
      a->k_cache16 = reinterpret_cast<uint16_t*>(k);
      a->v_cache16 = reinterpret_cast<uint16_t*>(v);
      return;
    case KvDtype::kQ8:
      a->k_cache8 = reinterpret_cast<int8_t*>(k);
      a->v_cache8 = reinterpret_cast<int8_t*>(v);
      a->k_scale8 = reinterpret_cast<float*>(ks_.data());
      a->v_scale8 = reinterpret_cast<float*>(vs_.data());
      return;
    default:
      a->k_cache = reinterpret_cast<float*>(k);
      a->v_cache = reinterpret_cast<float*>(v);
  }
}

void KvRows::View(KvView* view) const {
  switch (dtype_) {
    case KvDtype::kBF16:
      view->k16 = reinterpret_cast<const uint16_t*>(k_.data());
      view->v16 = reinterpret_cast<const uint16_t*>(v_.data());
      return;
    case KvDtype::kQ8:
      view->k8 = reinterpret_cast<const int8_t*>(k_.data());
      view->v8 = reinterpret_cast<const int8_t*>(v_.data());
      view->k_scale8 = reinterpret_cast<const float*>(ks_.data());
      view->v_scale8 = reinterpret_cast<const float*>(vs_.data());
      return;
    default:
      view->k = reinterpret_cast<const float*>(k_.data());
      view->v = reinterpret_cast<const float*>(v_.data());
  }
}

}  // namespace g4
