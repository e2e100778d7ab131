// CUDA Softcap (ops/softcap.h): x = cap * tanh(x / cap) in place, f32, on a device pointer.
#include "kernels/cuda/device_context.h"
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/load.cuh"

namespace g4::cuda {
namespace {

__global__ void SoftcapKernel(float* x, int64_t n, float cap, float inv_cap) {
  GridDependency();
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    x[i] = cap * tanhf(x[i] * inv_cap);
  }
}

}  // namespace

namespace dev {

void Softcap(ThreadPool&, float* x, int64_t n, float cap) {
  DeviceContext* dc = ActiveDevice();
  if (n <= 0 || dc == nullptr) return;
  LaunchKernel(SoftcapKernel, GridFor(n, 256), 256, 0, dc->stream(), x, n, cap, 1.0f / cap);
  dc->Launched("softcap");
}

}  // namespace dev
}  // namespace g4::cuda
