// One row of ResidualNorm (ops/residual_norm.h) computed by a block of kThreads threads: the
// row's sum of squares of x, the update of h (each thread keeps the elements it wrote), the sum
// of squares of the new h, the second norm. Shared by the ResidualNorm kernel (residual_norm.cu,
// one block per row) and the GEMV's ResidualNorm tail (gemv.cuh, the grid's last block, all
// rows), so the two give the same bits. The arithmetic is the unfused kernels' (rms_norm.cu,
// elementwise.cu) with contraction into FMAs ruled out. x is read through L2 (__ldcg): in the
// GEMV tail other blocks wrote it.
#pragma once

#include <cstdint>

#include "kernels/cuda/load.cuh"

namespace g4::cuda {

// w / next_w: nullptr for no weight. yr: nullptr to skip the second norm (uniform over the
// block). partials: kThreads / 32 floats of shared memory.
template <int kThreads>
__device__ __forceinline__ void ResidualNormRow(const float* xr, const void* w, ElemType w_type,
                                                float* hr, float scale, const void* next_w,
                                                ElemType next_type, float* yr, int64_t D,
                                                float eps, float* partials) {
  float ss = 0.0f;
  for (int64_t d = threadIdx.x; d < D; d += kThreads) {
    const float v = __ldcg(xr + d);
    ss += v * v;
  }
  const float inv = rsqrtf(BlockSum<kThreads>(ss, partials) / static_cast<float>(D) + eps);
  float ss_h = 0.0f;
  for (int64_t d = threadIdx.x; d < D; d += kThreads) {
    const float wd = w == nullptr ? 1.0f : LoadF32(w_type, w, d);
    const float v =
        __fmul_rn(__fadd_rn(hr[d], __fmul_rn(__fmul_rn(__ldcg(xr + d), inv), wd)), scale);
    hr[d] = v;
    ss_h += v * v;
  }
  if (yr == nullptr) return;
  const float inv_h = rsqrtf(BlockSum<kThreads>(ss_h, partials) / static_cast<float>(D) + eps);
  for (int64_t d = threadIdx.x; d < D; d += kThreads) {
    const float wd = next_w == nullptr ? 1.0f : LoadF32(next_type, next_w, d);
    yr[d] = __fmul_rn(__fmul_rn(hr[d], inv_h), wd);
  }
}

}  // namespace g4::cuda
