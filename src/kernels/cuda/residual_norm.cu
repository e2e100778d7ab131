// CUDA ResidualNorm (ops/residual_norm.h): h = (h + RmsNorm(x) * w) * scale, then
// out = RmsNorm(h) * next_w, one block per row: the row's sum of squares of x, the update of h
// (each thread keeps the elements it wrote), the sum of squares of the new h, the second norm.
// One launch where the unfused model issued RmsNorm, Add, Scale and RmsNorm. The arithmetic is
// the unfused kernels' (rms_norm.cu, elementwise.cu) with contraction into FMAs ruled out, so
// fusing changes no result. Weights as stored (F32/BF16/F16, uploaded once) or none. With a
// projection at decode rows, the projection's GEMV grid runs the same rows in its last block
// (gemv.cuh): the sub-block's end is one launch.
#include "kernels/cuda/device_context.h"
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/load.cuh"
#include "kernels/cuda/matmul.h"
#include "kernels/cuda/norm_weight.cuh"
#include "kernels/cuda/residual_norm.cuh"

namespace g4::cuda {
namespace {

constexpr int kThreads = 256;

// One block per row (residual_norm.cuh). w / next_w: nullptr for no weight. out: nullptr to
// skip the second norm.
__global__ void ResidualNormKernel(const float* x, const void* w, ElemType w_type, float* h,
                                   float scale, const void* next_w, ElemType next_type,
                                   float* out, int64_t D, float eps) {
  GridDependency();
  __shared__ float partials[kThreads / 32];
  const int64_t at = static_cast<int64_t>(blockIdx.x) * D;
  ResidualNormRow<kThreads>(x + at, w, w_type, h + at, scale, next_w, next_type,
                            out == nullptr ? nullptr : out + at, D, eps, partials);
}

// The projection (a.proj) as one GEMV grid with the norm in its last block (GemvResidual),
// when it runs as one: a device weight, GemvGroupable at these rows, within one launch. True
// when launched (or its failure recorded); false: the caller runs MatMul, then the kernel above.
bool ProjectionWithNorm(DeviceContext* dc, const ResidualNormArgs& a, const GemvResidual& tail) {
  const TensorView& w = *a.proj;
  const int64_t max_t = w.quantized() ? kInt4GemvMaxT : kGemvMaxT;
  if (!MatMulOnDevice(w) || a.R > max_t || w.shape.size() != 2 || w.dim(0) != a.D ||
      tail.counter == nullptr) {
    return false;
  }
  const TensorView* dw = dc->DeviceWeight(w, /*convert_to_compute=*/true);
  if (dw == nullptr) return true;  // recorded
  if (!GemvGroupable(&dw, 1, a.R)) return false;
  GemvGate gate;
  gate.residual = tail;
  float* y[1] = {a.x};
  dc->Ok(GroupedGemvDevice(&dw, y, 1, gate, a.proj_in, a.R, dc->stream()), "residual_norm");
  return true;
}

}  // namespace

namespace dev {

void ResidualNorm(ThreadPool& pool, const ResidualNormArgs& a) {
  DeviceContext* dc = ActiveDevice();
  if (a.R <= 0 || a.D <= 0 || dc == nullptr) return;
  bool ok = true;
  ElemType w_type = ElemType::kF32, next_type = ElemType::kF32;
  const void* dw = NormWeight(dc, a.w, &w_type, &ok, "residual_norm");
  const void* dnext =
      a.out != nullptr ? NormWeight(dc, a.next_w, &next_type, &ok, "residual_norm")
                       : nullptr;
  if (!ok) return;
  if (a.proj != nullptr) {
    GemvResidual tail;
    tail.counter = dc->gemv_counter();
    tail.w = dw, tail.w_type = static_cast<int>(w_type);
    tail.h = a.h, tail.scale = a.scale;
    tail.next_w = dnext, tail.next_type = static_cast<int>(next_type);
    tail.out = a.out, tail.eps = a.eps;
    if (ProjectionWithNorm(dc, a, tail)) return;
    MatMul(pool, *a.proj, a.proj_in, a.R, a.x);
  }
  LaunchKernel(ResidualNormKernel, static_cast<unsigned>(a.R), kThreads, 0, dc->stream(), a.x, dw,
               w_type, a.h, a.scale, dnext, next_type, a.out, a.D, a.eps);
  dc->Launched("residual_norm");
}

}  // namespace dev
}  // namespace g4::cuda
