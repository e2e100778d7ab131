// CUDA NormRope (ops/norm_rope.h): per-head RmsNorm, then RoPE where the part rotates, in
// place, one block per (part, token, head) row: a layer's q, k and v in one launch. The norm is
// cuda::RmsNorm's (f32 sum of squares, x * inv * w in f32), the rotation cuda::Rope's (angle,
// sine and cosine in f64): the same results as the separate kernels. Each thread normalizes and
// rotates its own pairs (j, j + D/2), so nothing is exchanged after the sum; with KV writes
// (a decode batch's items), it also stores those elements in the row's cache slot (KvSlot,
// kv_write.cuh) of the write that covers the row. Weights as stored (F32/BF16/F16, uploaded
// once) or none.
#include "kernels/cuda/device_context.h"
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/kv_write.cuh"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/load.cuh"
#include "kernels/cuda/norm_weight.cuh"

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
  // Rows [kv_first[j], kv_first[j] + kv[j].C) of parts 1 and 2 (k, v) also go to the cache
  // slots of write j (device pointers).
  int kv_count;
  KvWriteArgs kv[kMaxNormRopeKvWrites];
  int64_t kv_first[kMaxNormRopeKvWrites];
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
  float* cache = nullptr;  // this row's slot in its write's KV cache (as KvWriteKernel), or none
  for (int j = 0; p > 0 && j < parts.kv_count; ++j) {
    const KvWriteArgs& kv = parts.kv[j];
    const int64_t i = t - parts.kv_first[j];
    if (i < 0 || i >= kv.C) continue;
    const int32_t pos = kv.pos[i];
    const int64_t slot = KvSlot(pos, kv.window, kv.base, kv.capacity);
    if (slot >= 0) {
      const int64_t head = row % parts.H[p];
      const int64_t e = KvEntry(kv.block_table, kv.block_size, slot);
      cache = (p == 1 ? kv.k_cache : kv.v_cache) + e * kv.row + head * D;
      if (p == 1 && head == 0 && threadIdx.x == 0) kv.pos_cache[slot] = pos;
    }
    break;
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

// Whether a's KV writes can be the kernel's: each covers whole rows of parts 1 and 2 (k, v) at
// the same row offset, within the T rows; their first rows go to `first`.
bool KvWritesFit(const NormRopeArgs& a, int64_t* first) {
  if (a.count != 3 || a.kv_count > kMaxNormRopeKvWrites || a.parts[1].H != a.parts[2].H) {
    return false;
  }
  const int64_t row = a.parts[1].H * a.D;
  for (int j = 0; j < a.kv_count; ++j) {
    const KvWriteArgs& kv = a.kv[j];
    const int64_t off = kv.k - a.parts[1].x;
    if (kv.row != row || off < 0 || off % row != 0 || kv.v - a.parts[2].x != off || kv.C < 0 ||
        off / row + kv.C > a.T) {
      return false;
    }
    first[j] = off / row;
  }
  return true;
}

}  // namespace

namespace dev {

void NormRope(ThreadPool& pool, const NormRopeArgs& a) {
  DeviceContext* dc = ActiveDevice();
  if (a.T <= 0 || a.D <= 0 || a.count <= 0 || dc == nullptr) return;
  NormRopeParts parts{};
  if (a.kv_count > 0 && !KvWritesFit(a, parts.kv_first)) {  // the norms, then the writes
    return NormRopeThenWrites(
        a, [&](const NormRopeArgs& n) { NormRope(pool, n); },
        [&](const KvWriteArgs& w) { KvWrite(pool, w); });
  }
  parts.count = a.count;
  parts.kv_count = a.kv_count;
  for (int j = 0; j < a.kv_count; ++j) parts.kv[j] = a.kv[j];
  bool ok = true;
  int64_t rows = 0;
  for (int p = 0; p < a.count; ++p) {
    const NormRopePart& in = a.parts[p];
    parts.x[p] = in.x;
    parts.w[p] = NormWeight(dc, in.w, &parts.w_type[p], &ok, "norm_rope");
    parts.H[p] = in.H;
    parts.rope[p] = in.rope;
    parts.first[p] = rows;
    rows += a.T * in.H;
  }
  parts.first[a.count] = rows;
  if (!ok || rows <= 0) return;
  LaunchKernel(NormRopeKernel, static_cast<unsigned>(rows), kThreads, 0, dc->stream(), parts,
               a.positions, a.D, a.eps, a.inv_freq);
  dc->Launched("norm_rope");
}

}  // namespace dev
}  // namespace g4::cuda
