// CUDA NormRope (ops/norm_rope.h): per-head RmsNorm, then RoPE where the part rotates, in
// place, one block per (part, token, head) row: a layer's q, k and v in one launch. The norm is
// cuda::RmsNorm's (f32 sum of squares, x * inv * w in f32), the rotation cuda::Rope's (angle,
// sine and cosine in f64): the same results as the separate kernels. Each thread normalizes and
// rotates its own pairs (j, j + D/2), so nothing is exchanged after the sum; with a KV write,
// it also stores those elements in the row's cache slot (kv_write.cu's slot rule). Weights as
// stored (F32/BF16/F16, uploaded once) or none.
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/load.cuh"
#include "kernels/cuda/norm_weight.cuh"
#include "kernels/cuda/staging.h"

namespace g4::cuda {
namespace {

constexpr int kThreads = 128;

// The parts of one launch, passed by value: blocks [first[p], first[p + 1]) are part p's
// T * H[p] rows of D. w[p]: nullptr for no weight.
struct NormRopeParts {
  float* x[kMaxNormRopeParts];
  const void* w[kMaxNormRopeParts];
  ElemType w_type[kMaxNormRopeParts];
  int64_t H[kMaxNormRopeParts];
  bool rope[kMaxNormRopeParts];
  int64_t first[kMaxNormRopeParts + 1];
  int count;
  bool write_kv;    // parts 1 and 2 (k, v) also go to the cache slots of kv
  KvWriteArgs kv;   // device pointers
};

// inv_freq: nullptr for no rotation in any part.
__global__ void NormRopeKernel(NormRopeParts parts, const int32_t* positions, int64_t D,
                               float eps, const float* inv_freq) {
  GridDependency();
  __shared__ float partials[kThreads / 32];
  int p = 0;
  while (p + 1 < parts.count && blockIdx.x >= parts.first[p + 1]) ++p;
  const int64_t row = blockIdx.x - parts.first[p];
  float* v = parts.x[p] + row * D;
  const void* w = parts.w[p];
  const ElemType w_type = parts.w_type[p];
  float ss = 0.0f;
  for (int64_t d = threadIdx.x; d < D; d += kThreads) ss += v[d] * v[d];
  const float inv = rsqrtf(BlockSum<kThreads>(ss, partials) / static_cast<float>(D) + eps);
  auto normed = [&](int64_t d) {
    return __fmul_rn(__fmul_rn(v[d], inv), w == nullptr ? 1.0f : LoadF32(w_type, w, d));
  };
  const int64_t t = row / parts.H[p];
  float* cache = nullptr;  // this row's slot in the KV cache (as KvWriteKernel), or none
  if (parts.write_kv && p > 0) {
    const int32_t pos = parts.kv.pos[t];
    const int64_t slot = parts.kv.window > 0 ? pos % parts.kv.window : pos;
    if (pos >= 0 && slot < parts.kv.capacity) {
      const int64_t head = row % parts.H[p];
      cache = (p == 1 ? parts.kv.k_cache : parts.kv.v_cache) + slot * parts.kv.row + head * D;
      if (p == 1 && head == 0 && threadIdx.x == 0) parts.kv.pos_cache[slot] = pos;
    }
  }
  auto store = [&](int64_t d, float value) {
    v[d] = value;
    if (cache != nullptr) cache[d] = value;
  };
  const int64_t half = inv_freq == nullptr || !parts.rope[p] ? 0 : D / 2;
  // Elements outside the rotated pairs (all of them without rotation, the last of an odd D).
  for (int64_t d = 2 * half + threadIdx.x; d < D; d += kThreads) store(d, normed(d));
  for (int64_t j = threadIdx.x; j < half; j += kThreads) {
    const double angle = static_cast<double>(positions[t]) * static_cast<double>(inv_freq[j]);
    double s, c;
    sincos(angle, &s, &c);
    const double a = normed(j), b = normed(j + half);
    store(j, static_cast<float>(a * c - b * s));
    store(j + half, static_cast<float>(b * c + a * s));
  }
}

// Whether a's KV write can be the kernel's: k and v are its parts 1 and 2, a row of each.
bool KvWriteFits(const NormRopeArgs& a) {
  const KvWriteArgs& kv = *a.kv;
  return a.count == 3 && kv.k == a.parts[1].x && kv.v == a.parts[2].x && kv.C == a.T &&
         a.parts[1].H == a.parts[2].H && kv.row == a.parts[1].H * a.D;
}

}  // namespace

namespace dev {

void NormRope(ThreadPool& pool, const NormRopeArgs& a) {
  using namespace staging;
  if (a.T <= 0 || a.D <= 0 || a.count <= 0 || !Ready()) return;
  if (a.kv != nullptr && !KvWriteFits(a)) {  // the norms, then the write as its own op
    NormRopeArgs norms = a;
    norms.kv = nullptr;
    NormRope(pool, norms);
    return KvWrite(pool, *a.kv);
  }
  NormRopeParts parts{};
  parts.count = a.count;
  parts.write_kv = a.kv != nullptr;
  if (parts.write_kv) parts.kv = *a.kv;
  bool ok = true;
  int64_t rows = 0;
  for (int p = 0; p < a.count; ++p) {
    const NormRopePart& in = a.parts[p];
    parts.x[p] = in.x;
    parts.w[p] = NormWeight(in.w, &parts.w_type[p], &ok, "norm_rope");
    parts.H[p] = in.H;
    parts.rope[p] = in.rope;
    parts.first[p] = rows;
    rows += a.T * in.H;
  }
  parts.first[a.count] = rows;
  if (!ok || rows <= 0) return;
  LaunchKernel(NormRopeKernel, static_cast<unsigned>(rows), kThreads, 0, Stream(), parts,
               a.positions, a.D, a.eps, a.inv_freq);
  Launched("norm_rope");
}

}  // namespace dev
}  // namespace g4::cuda
