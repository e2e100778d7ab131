// CUDA RmsNorm (ops/rms_norm.h): y = x / sqrt(mean(x^2) + eps) * w, one block per row, the sum
// of squares reduced in f32 (warp shuffles, then across warps in shared memory). w is F32/BF16/
// F16 as stored (uploaded once, not converted: norms are tiny) or empty (no weight). x and out
// (device pointers) may alias: each thread reads its elements before writing them.
#include "kernels/cuda/device_context.h"
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/load.cuh"
#include "kernels/cuda/norm_weight.cuh"

namespace g4::cuda {
namespace {

constexpr int kThreads = 256;

template <ElemType E>
__global__ void RmsNormKernel(const float* x, const void* w, int64_t D, float eps, float* out) {
  GridDependency();
  const float* xr = x + blockIdx.x * D;
  float* yr = out + blockIdx.x * D;
  float ss = 0.0f;
  for (int64_t d = threadIdx.x; d < D; d += kThreads) ss += xr[d] * xr[d];
  __shared__ float partials[kThreads / 32];
  const float total = BlockSum<kThreads>(ss, partials);
  const float inv = rsqrtf(total / static_cast<float>(D) + eps);
  for (int64_t d = threadIdx.x; d < D; d += kThreads) {
    const float wd = w == nullptr ? 1.0f : LoadF32<E>(w, d);
    yr[d] = xr[d] * inv * wd;
  }
}

}  // namespace

namespace dev {

void RmsNorm(ThreadPool&, const float* x, const TensorView& w, int64_t R, int64_t D, float eps,
             float* out) {
  DeviceContext* dc = ActiveDevice();
  if (R <= 0 || D <= 0 || dc == nullptr) return;
  ElemType w_type;
  bool ok = true;
  const void* dw = NormWeight(dc, &w, &w_type, &ok, "rms_norm");
  if (!ok) return;
  const unsigned rows = static_cast<unsigned>(R);
  cudaStream_t s = dc->stream();
  // The weight's type as a template argument: the kernel's loads need no run-time branch.
  switch (w_type) {
    case ElemType::kF32:
      LaunchKernel(RmsNormKernel<ElemType::kF32>, rows, kThreads, 0, s, x, dw, D, eps, out);
      break;
    case ElemType::kBF16:
      LaunchKernel(RmsNormKernel<ElemType::kBF16>, rows, kThreads, 0, s, x, dw, D, eps, out);
      break;
    case ElemType::kF16:
      LaunchKernel(RmsNormKernel<ElemType::kF16>, rows, kThreads, 0, s, x, dw, D, eps, out);
      break;
  }
  dc->Launched("rms_norm");
}

}  // namespace dev
}  // namespace g4::cuda
