// CUDA Softcap (ops/softcap.h): x = cap * tanh(x / cap) in place, f32, staged through host
// memory (kernels.h).
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/load.cuh"
#include "kernels/cuda/staging.h"

namespace g4::cuda {
namespace {

__global__ void SoftcapKernel(float* x, int64_t n, float cap, float inv_cap) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    x[i] = cap * tanhf(x[i] * inv_cap);
  }
}

}  // namespace

void Softcap(ThreadPool&, float* x, int64_t n, float cap) {
  using namespace staging;
  if (n <= 0) return;
  const size_t bytes = static_cast<size_t>(n) * sizeof(float);
  float* dx = ScratchF(0, n);
  if (dx == nullptr || !ToDevice(dx, x, bytes)) return FillNaN(x, n);
  SoftcapKernel<<<GridFor(n, 256), 256, 0, Stream()>>>(dx, n, cap, 1.0f / cap);
  if (!Sync("softcap") || !ToHost(x, dx, bytes)) FillNaN(x, n);
}

}  // namespace g4::cuda
