// CUDA Add / Scale (ops/elementwise.h) on device pointers. out may alias a or b: the kernels
// read both inputs before writing, element by element.
#include "kernels/cuda/device_context.h"
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/load.cuh"

namespace g4::cuda {
namespace {

__global__ void AddKernel(const float* a, const float* b, int64_t n, float* out) {
  GridDependency();
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    out[i] = a[i] + b[i];
  }
}

__global__ void ScaleKernel(float* x, int64_t n, float s) {
  GridDependency();
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    x[i] *= s;
  }
}

}  // namespace

namespace dev {

void Add(ThreadPool&, const float* a, const float* b, int64_t n, float* out) {
  DeviceContext* dc = ActiveDevice();
  if (n <= 0 || dc == nullptr) return;
  LaunchKernel(AddKernel, GridFor(n, 256), 256, 0, dc->stream(), a, b, n, out);
  dc->Launched("add");
}

void Scale(ThreadPool&, float* x, int64_t n, float s) {
  DeviceContext* dc = ActiveDevice();
  if (n <= 0 || dc == nullptr) return;
  LaunchKernel(ScaleKernel, GridFor(n, 256), 256, 0, dc->stream(), x, n, s);
  dc->Launched("scale");
}

}  // namespace dev
}  // namespace g4::cuda
