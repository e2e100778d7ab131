// The end of a GEMV warp, shared by the dense and the int4 GEMV kernels (matmul.cu,
// matmul_quant.cu): each row's partial sums reduced across the warp, and lane 0 writes the
// result for every x row t < T, through the GemvGate epilogue (matmul.h).
#pragma once

#include <cstdint>

#include "kernels/cuda/load.cuh"
#include "kernels/cuda/matmul.h"

namespace g4::cuda {

// acc[r][t]: this lane's partial sum of weight row r (kRows: 2 for GemvGate::kWeight, else 1)
// with x row t; y: [T, N]; seg: the epilogue's up rows for GemvGate::kRows.
template <GemvGate::Kind kGate, int kRows, int kMaxT>
__device__ __forceinline__ void GemvEpilogue(float (&acc)[kRows][kMaxT], int T, int lane,
                                             float* y, int64_t N, int64_t n,
                                             const GemvSegments& seg) {
  static_assert(kRows == (kGate == GemvGate::kWeight ? 2 : 1), "a gate and an up row, or one");
#pragma unroll
  for (int t = 0; t < kMaxT; ++t) {
    float v[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      v[r] = acc[r][t];
      for (int off = 16; off > 0; off /= 2) v[r] += __shfl_xor_sync(0xffffffffu, v[r], off);
    }
    if (lane != 0 || t >= T) continue;
    if constexpr (kGate == GemvGate::kWeight) {
      y[t * N + n] = GeluTanhF32(v[0]) * v[kRows - 1];
    } else if constexpr (kGate == GemvGate::kRows) {
      y[t * N + n] = GeluTanhF32(v[0]) * seg.up_rows[t * seg.up_stride + n];
    } else {
      y[t * N + n] = v[0];
    }
  }
}

}  // namespace g4::cuda
