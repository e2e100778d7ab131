// CUDA Add / Scale (ops/elementwise.h), staged through host memory (kernels.h). out may alias a
// or b: the kernels read both inputs before writing, element by element.
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/load.cuh"
#include "kernels/cuda/staging.h"

namespace g4::cuda {
namespace {

__global__ void AddKernel(const float* a, const float* b, int64_t n, float* out) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    out[i] = a[i] + b[i];
  }
}

__global__ void ScaleKernel(float* x, int64_t n, float s) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    x[i] *= s;
  }
}

}  // namespace

void Add(ThreadPool&, const float* a, const float* b, int64_t n, float* out) {
  using namespace staging;
  if (n <= 0) return;
  const size_t bytes = static_cast<size_t>(n) * sizeof(float);
  float* da = ScratchF(0, n);
  float* db = ScratchF(1, n);
  if (da == nullptr || db == nullptr || !ToDevice(da, a, bytes) || !ToDevice(db, b, bytes)) {
    return FillNaN(out, n);
  }
  AddKernel<<<GridFor(n, 256), 256, 0, Stream()>>>(da, db, n, da);
  if (!Sync("add") || !ToHost(out, da, bytes)) FillNaN(out, n);
}

void Scale(ThreadPool&, float* x, int64_t n, float s) {
  using namespace staging;
  if (n <= 0) return;
  const size_t bytes = static_cast<size_t>(n) * sizeof(float);
  float* dx = ScratchF(0, n);
  if (dx == nullptr || !ToDevice(dx, x, bytes)) return FillNaN(x, n);
  ScaleKernel<<<GridFor(n, 256), 256, 0, Stream()>>>(dx, n, s);
  if (!Sync("scale") || !ToHost(x, dx, bytes)) FillNaN(x, n);
}

}  // namespace g4::cuda
