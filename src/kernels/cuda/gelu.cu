// CUDA GeluMul (ops/gelu.h): out = gelu_tanh(gate) * up in f32 with tanhf (the tanh form, as HF
// gelu_pytorch_tanh), on device pointers, over R rows of n (up's rows up_stride apart), one
// launch for all rows. out may alias gate, or up when up_stride == n (elementwise).
#include "kernels/cuda/device_context.h"
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/load.cuh"

namespace g4::cuda {
namespace {

__global__ void GeluMulKernel(const float* gate, const float* up, int64_t total, int64_t n,
                              int64_t up_stride, float* out) {
  GridDependency();
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / n;
    out[i] = GeluTanhF32(gate[i]) * up[r * up_stride + (i - r * n)];
  }
}

}  // namespace

namespace dev {

void GeluMul(ThreadPool&, const float* gate, const float* up, int64_t R, int64_t n,
             int64_t up_stride, float* out) {
  DeviceContext* dc = ActiveDevice();
  if (R <= 0 || n <= 0 || dc == nullptr) return;
  LaunchKernel(GeluMulKernel, GridFor(R * n, 256), 256, 0, dc->stream(), gate, up, R * n, n,
               up_stride, out);
  dc->Launched("gelu_mul");
}

}  // namespace dev
}  // namespace g4::cuda
