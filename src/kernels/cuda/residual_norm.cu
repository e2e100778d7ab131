// CUDA ResidualNorm (ops/residual_norm.h): h = (h + RmsNorm(x) * w) * scale, then
// out = RmsNorm(h) * next_w, one block per row: the row's sum of squares of x, the update of h
// (each thread keeps the elements it wrote), the sum of squares of the new h, the second norm.
// One launch where the unfused model issued RmsNorm, Add, Scale and RmsNorm. The arithmetic is
// the unfused kernels' (rms_norm.cu, elementwise.cu) with contraction into FMAs ruled out, so
// fusing changes no result. Weights as stored (F32/BF16/F16, uploaded once) or none.
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/load.cuh"
#include "kernels/cuda/norm_weight.cuh"
#include "kernels/cuda/staging.h"

namespace g4::cuda {
namespace {

constexpr int kThreads = 256;

// w / next_w: nullptr for no weight. out: nullptr to skip the second norm.
__global__ void ResidualNormKernel(const float* x, const void* w, ElemType w_type, float* h,
                                   float scale, const void* next_w, ElemType next_type,
                                   float* out, int64_t D, float eps) {
  __shared__ float partials[kThreads / 32];
  const float* xr = x + blockIdx.x * D;
  float* hr = h + blockIdx.x * D;
  float ss = 0.0f;
  for (int64_t d = threadIdx.x; d < D; d += kThreads) ss += xr[d] * xr[d];
  const float inv = rsqrtf(BlockSum<kThreads>(ss, partials) / static_cast<float>(D) + eps);
  float ss_h = 0.0f;
  for (int64_t d = threadIdx.x; d < D; d += kThreads) {
    const float wd = w == nullptr ? 1.0f : LoadF32(w_type, w, d);
    const float v = __fmul_rn(__fadd_rn(hr[d], __fmul_rn(__fmul_rn(xr[d], inv), wd)), scale);
    hr[d] = v;
    ss_h += v * v;
  }
  if (out == nullptr) return;  // uniform over the block: no barrier is skipped by some threads
  const float inv_h = rsqrtf(BlockSum<kThreads>(ss_h, partials) / static_cast<float>(D) + eps);
  float* yr = out + blockIdx.x * D;
  for (int64_t d = threadIdx.x; d < D; d += kThreads) {
    const float wd = next_w == nullptr ? 1.0f : LoadF32(next_type, next_w, d);
    yr[d] = __fmul_rn(__fmul_rn(hr[d], inv_h), wd);
  }
}

}  // namespace

namespace dev {

void ResidualNorm(ThreadPool&, const ResidualNormArgs& a) {
  using namespace staging;
  if (a.R <= 0 || a.D <= 0 || !Ready()) return;
  bool ok = true;
  ElemType w_type = ElemType::kF32, next_type = ElemType::kF32;
  const void* dw = NormWeight(a.w, &w_type, &ok, "residual_norm");
  const void* dnext =
      a.out != nullptr ? NormWeight(a.next_w, &next_type, &ok, "residual_norm") : nullptr;
  if (!ok) return;
  ResidualNormKernel<<<static_cast<unsigned>(a.R), kThreads, 0, Stream()>>>(
      a.x, dw, w_type, a.h, a.scale, dnext, next_type, a.out, a.D, a.eps);
  Launched("residual_norm");
}

}  // namespace dev
}  // namespace g4::cuda
