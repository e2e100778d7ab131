// The end of a GEMV warp, shared by the dense and the int4 GEMV kernels (matmul.cu,
// matmul_quant.cu): each row's partial sums reduced across the warp, and lane 0 writes the
// result for every x row t < T; two rows (a gated group: gate and up) write gelu(gate) * up.
#pragma once

#include <cstdint>

#include "kernels/cuda/load.cuh"

namespace g4::cuda {

// acc[r][t]: this lane's partial sum of weight row r (of kRows) with x row t; y: [T, N].
template <int kRows, int kMaxT>
__device__ __forceinline__ void GemvEpilogue(float (&acc)[kRows][kMaxT], int T, int lane,
                                             float* y, int64_t N, int64_t n) {
  static_assert(kRows == 1 || kRows == 2, "one row, or a gate and an up row");
#pragma unroll
  for (int t = 0; t < kMaxT; ++t) {
    float v[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      v[r] = acc[r][t];
      for (int off = 16; off > 0; off /= 2) v[r] += __shfl_xor_sync(0xffffffffu, v[r], off);
    }
    if (lane == 0 && t < T) y[t * N + n] = kRows == 2 ? GeluTanhF32(v[0]) * v[kRows - 1] : v[0];
  }
}

}  // namespace g4::cuda
