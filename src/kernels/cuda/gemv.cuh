// What the dense and the int4 GEMV kernels (matmul.cu, matmul_quant.cu) share: the prefetch of
// a block's weight rows before the grid dependency; the end of a GEMV warp (each row's partial
// sums reduced across the warp, and lane 0 writes the result for every x row t < T, through the
// GemvGate epilogue, matmul.h); and the end of a GEMV grid with a ResidualNorm tail
// (GemvResidual).
#pragma once

#include <cstdint>

#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/load.cuh"
#include "kernels/cuda/matmul.h"
#include "kernels/cuda/residual_norm.cuh"

namespace g4::cuda {

// Called by every thread before GridDependency(): thread 0 prefetches (PrefetchL2) the block's
// weight rows, [n0, n0 + rows_per_block) within N of its segment's weight (and of up, the next
// segment, for GemvGate::kWeight), row_bytes each, and for int4 weights their scale rows,
// scale_row_bytes each (0: none). Only weights: the rows of x are the predecessor's output.
template <GemvGate::Kind kGate>
__device__ __forceinline__ void PrefetchGemvRows(const GemvSegments& seg, int rows_per_block,
                                                 int64_t row_bytes, int64_t scale_row_bytes) {
  if (threadIdx.x != 0) return;
  const int s = seg.SegmentOf(blockIdx.x);
  const int64_t n0 = static_cast<int64_t>(blockIdx.x - seg.first_block[s]) * rows_per_block;
  const int64_t left = seg.N[s] - n0;
  const int64_t rows = left < rows_per_block ? left : rows_per_block;
  if (rows <= 0) return;
  constexpr int kRows = kGate == GemvGate::kWeight ? 2 : 1;
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    PrefetchL2(static_cast<const uint8_t*>(seg.w[s + r]) + n0 * row_bytes, rows * row_bytes);
    if (scale_row_bytes > 0) {
      PrefetchL2(static_cast<const uint8_t*>(seg.scales[s + r]) + n0 * scale_row_bytes,
                 rows * scale_row_bytes);
    }
  }
}

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

// Called by every thread of every block after its GEMV rows (y: [T, D], the grid's only
// segment): the last block to get here runs ResidualNorm (residual_norm.cuh) over the T rows
// of y, then resets the counter. Each thread's y writes are fenced before its block counts
// itself, and the last block fences again before it reads them, so it sees every block's rows.
template <int kThreads>
__device__ __forceinline__ void GemvResidualTail(const GemvResidual& r, const float* y, int T,
                                                 int64_t D) {
  __shared__ float partials[kThreads / 32];
  __threadfence();
  __syncthreads();  // every warp's rows written and fenced before thread 0 counts the block
  const bool last = __syncthreads_or(threadIdx.x == 0 &&
                                     atomicAdd(r.counter, 1u) == gridDim.x - 1) != 0;
  if (!last) return;  // uniform over the block
  __threadfence();
  for (int t = 0; t < T; ++t) {
    ResidualNormRow<kThreads>(y + t * D, r.w, static_cast<ElemType>(r.w_type), r.h + t * D,
                              r.scale, r.next_w, static_cast<ElemType>(r.next_type),
                              r.out == nullptr ? nullptr : r.out + t * D, D, r.eps, partials);
  }
  if (threadIdx.x == 0) *r.counter = 0;
}

}  // namespace g4::cuda
