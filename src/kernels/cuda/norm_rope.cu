// CUDA NormRope (ops/norm_rope.h): per-head RmsNorm, then RoPE, in place, one block per
// (token, head) row. The norm is cuda::RmsNorm's (f32 sum of squares, x * inv * w in f32), the
// rotation cuda::Rope's (angle, sine and cosine in f64): the same results as the two kernels,
// in one launch. Each thread normalizes and rotates its own pairs (j, j + D/2), so nothing is
// exchanged after the sum. Weights as stored (F32/BF16/F16, uploaded once) or none.
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/load.cuh"
#include "kernels/cuda/norm_weight.cuh"
#include "kernels/cuda/staging.h"

namespace g4::cuda {
namespace {

constexpr int kThreads = 128;

// x: [T * H, D]; w: nullptr for no weight; inv_freq: nullptr for no rotation.
__global__ void NormRopeKernel(float* x, const void* w, ElemType w_type, const int32_t* positions,
                               int64_t H, int64_t D, float eps, const float* inv_freq) {
  __shared__ float partials[kThreads / 32];
  float* v = x + blockIdx.x * D;
  float ss = 0.0f;
  for (int64_t d = threadIdx.x; d < D; d += kThreads) ss += v[d] * v[d];
  const float inv = rsqrtf(BlockSum<kThreads>(ss, partials) / static_cast<float>(D) + eps);
  auto normed = [&](int64_t d) {
    return __fmul_rn(__fmul_rn(v[d], inv), w == nullptr ? 1.0f : LoadF32(w_type, w, d));
  };
  const int64_t half = inv_freq == nullptr ? 0 : D / 2;
  // Elements outside the rotated pairs (all of them without rotation, the last of an odd D).
  for (int64_t d = 2 * half + threadIdx.x; d < D; d += kThreads) v[d] = normed(d);
  const int64_t t = blockIdx.x / H;
  for (int64_t j = threadIdx.x; j < half; j += kThreads) {
    const double angle = static_cast<double>(positions[t]) * static_cast<double>(inv_freq[j]);
    double s, c;
    sincos(angle, &s, &c);
    const double a = normed(j), b = normed(j + half);
    v[j] = static_cast<float>(a * c - b * s);
    v[j + half] = static_cast<float>(b * c + a * s);
  }
}

}  // namespace

namespace dev {

void NormRope(ThreadPool&, float* x, const TensorView& w, const int32_t* positions, int64_t T,
              int64_t H, int64_t D, float eps, const float* inv_freq) {
  using namespace staging;
  if (T <= 0 || H <= 0 || D <= 0 || !Ready()) return;
  ElemType w_type;
  bool ok = true;
  const void* dw = NormWeight(&w, &w_type, &ok, "norm_rope");
  if (!ok) return;
  NormRopeKernel<<<static_cast<unsigned>(T * H), kThreads, 0, Stream()>>>(
      x, dw, w_type, positions, H, D, eps, inv_freq);
  Launched("norm_rope");
}

}  // namespace dev
}  // namespace g4::cuda
