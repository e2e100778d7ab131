// The device copy of a norm weight, for the kernels that read it with a run-time ElemType
// (residual_norm.cu, norm_rope.cu): F32/BF16/F16 as stored, uploaded once (dc's weight cache).
#pragma once

#include <string>

#include "kernels/cuda/device_context.h"
#include "kernels/cuda/load.cuh"

namespace g4::cuda {

// The device pointer of w and its element type in *type; nullptr for no weight (w null or
// empty). *ok becomes false (the failure recorded in dc, naming `op`) when w has another dtype
// or could not be uploaded.
inline const void* NormWeight(DeviceContext* dc, const TensorView* w, ElemType* type, bool* ok,
                              const char* op) {
  *type = ElemType::kF32;
  if (w == nullptr || w->empty()) return nullptr;
  switch (w->dtype) {
    case DType::kF32: break;
    case DType::kBF16: *type = ElemType::kBF16; break;
    case DType::kF16: *type = ElemType::kF16; break;
    default:
      dc->Ok(InvalidArgument(std::string(op) + " weight dtype " + DTypeName(w->dtype)), op);
      *ok = false;
      return nullptr;
  }
  const TensorView* cached = dc->DeviceWeight(*w, /*convert_to_compute=*/false);
  if (cached == nullptr) *ok = false;
  return cached == nullptr ? nullptr : cached->data;
}

}  // namespace g4::cuda
