// CUDA Rope (ops/rope.h): NeoX half-split rotation in place. Both Gemma 4 RoPEs are this one op:
// the sliding layers' default RoPE and the global layers' proportional RoPE differ only in
// inv_freq (zeros leave the unrotated pairs as they are), which the model computes once.
// One thread per (token, pair) computes the angle pos * inv_freq[j] and its sine and cosine in
// f64, as the reference does (positions reach 1e5+ radians, where f32 angles lose ~0.01 rad),
// then rotates that pair in every head. x, positions and inv_freq are device pointers.
#include "kernels/cuda/device_context.h"
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/load.cuh"

namespace g4::cuda {
namespace {

__global__ void RopeKernel(float* x, const int32_t* positions, const float* inv_freq, int64_t T,
                           int64_t H, int64_t D) {
  GridDependency();
  const int64_t half = D / 2;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < T * half;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t t = i / half, j = i % half;
    const double angle = static_cast<double>(positions[t]) * static_cast<double>(inv_freq[j]);
    double s, c;
    sincos(angle, &s, &c);
    for (int64_t h = 0; h < H; ++h) {
      float* v = x + (t * H + h) * D;
      const double a = v[j], b = v[j + half];
      v[j] = static_cast<float>(a * c - b * s);
      v[j + half] = static_cast<float>(b * c + a * s);
    }
  }
}

}  // namespace

namespace dev {

void Rope(ThreadPool&, float* x, const int32_t* positions, int64_t T, int64_t H, int64_t D,
          const float* inv_freq) {
  DeviceContext* dc = ActiveDevice();
  if (T <= 0 || H <= 0 || D < 2 || dc == nullptr) return;
  const int64_t half = D / 2;
  LaunchKernel(RopeKernel, GridFor(T * half, 128), 128, 0, dc->stream(), x, positions, inv_freq, T,
               H, D);
  dc->Launched("rope");
}

}  // namespace dev
}  // namespace g4::cuda
