// CPU Attention: softmax(q k^T * scale + mask) v per query head, Highway SIMD with runtime
// dispatch; must match g4::ref::Attention (src/kernels/ref/attention.cc, f64) to f32 accuracy,
// with exactly its mask: key slot s is visible to query t iff k_pos[s] >= 0 (filled slot),
// k_pos[s] <= q_pos[t] and, when window > 0, q_pos[t] - k_pos[s] < window; positions decide,
// never slot order (the KV cache may be a ring). GQA: query head h reads KV head
// h / (n_heads / n_kv_heads). Any head_dim (256, 512, odd) works: SIMD over head_dim with a
// scalar tail. A query that sees no key gets zeros.
// Per (token, head): gather the visible slots, SIMD dot products 4 keys at a time, a two-pass f32
// softmax (max, then exp), and SIMD accumulation of the V rows. The T * n_heads (token, head)
// pairs are split across the pool's threads.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/cpu/kernels.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/attention.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
#include "kernels/cpu/util-inl.h"

HWY_BEFORE_NAMESPACE();
namespace g4::cpu {
namespace HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// out[j] = dot(q, k_j) for the 4 rows k0..k3. q, k_j: [D].
void Dot4(const float* HWY_RESTRICT q, const float* HWY_RESTRICT k0, const float* HWY_RESTRICT k1,
          const float* HWY_RESTRICT k2, const float* HWY_RESTRICT k3, int64_t D, float* out) {
  const DF df;
  const int64_t L = static_cast<int64_t>(hn::Lanes(df));
  VF a0 = hn::Zero(df), a1 = a0, a2 = a0, a3 = a0;
  int64_t d = 0;
  for (; d + L <= D; d += L) {
    const VF qv = hn::LoadU(df, q + d);
    a0 = hn::MulAdd(qv, hn::LoadU(df, k0 + d), a0);
    a1 = hn::MulAdd(qv, hn::LoadU(df, k1 + d), a1);
    a2 = hn::MulAdd(qv, hn::LoadU(df, k2 + d), a2);
    a3 = hn::MulAdd(qv, hn::LoadU(df, k3 + d), a3);
  }
  float s0 = ReduceSum(df, a0), s1 = ReduceSum(df, a1), s2 = ReduceSum(df, a2),
        s3 = ReduceSum(df, a3);
  for (; d < D; ++d) {
    s0 += q[d] * k0[d];
    s1 += q[d] * k1[d];
    s2 += q[d] * k2[d];
    s3 += q[d] * k3[d];
  }
  out[0] = s0;
  out[1] = s1;
  out[2] = s2;
  out[3] = s3;
}

float Dot1(const float* HWY_RESTRICT q, const float* HWY_RESTRICT k, int64_t D) {
  const DF df;
  const int64_t L = static_cast<int64_t>(hn::Lanes(df));
  VF a = hn::Zero(df);
  int64_t d = 0;
  for (; d + L <= D; d += L) a = hn::MulAdd(hn::LoadU(df, q + d), hn::LoadU(df, k + d), a);
  float s = ReduceSum(df, a);
  for (; d < D; ++d) s += q[d] * k[d];
  return s;
}

// o += p0 v0 + p1 v1 + p2 v2 + p3 v3; pass p_j = 0 and any valid row for an unused slot.
// o, v_j: [D].
void Axpy4(const float* p, const float* HWY_RESTRICT v0, const float* HWY_RESTRICT v1,
           const float* HWY_RESTRICT v2, const float* HWY_RESTRICT v3, int64_t D,
           float* HWY_RESTRICT o) {
  const DF df;
  const int64_t L = static_cast<int64_t>(hn::Lanes(df));
  const VF p0 = hn::Set(df, p[0]), p1 = hn::Set(df, p[1]), p2 = hn::Set(df, p[2]),
           p3 = hn::Set(df, p[3]);
  int64_t d = 0;
  for (; d + L <= D; d += L) {
    VF acc = hn::LoadU(df, o + d);
    acc = hn::MulAdd(p0, hn::LoadU(df, v0 + d), acc);
    acc = hn::MulAdd(p1, hn::LoadU(df, v1 + d), acc);
    acc = hn::MulAdd(p2, hn::LoadU(df, v2 + d), acc);
    acc = hn::MulAdd(p3, hn::LoadU(df, v3 + d), acc);
    hn::StoreU(acc, df, o + d);
  }
  for (; d < D; ++d) o[d] += p[0] * v0[d] + p[1] * v1[d] + p[2] * v2[d] + p[3] * v3[d];
}

// Per-thread scratch, reused across calls so decode does not allocate per layer.
struct Scratch {
  std::vector<int32_t> visible;  // [S] indices of the visible slots
  std::vector<float> p;          // [S] scores, then softmax numerators
};

// One (token t, head h) pair, i = t * n_heads + h.
void AttendOne(const AttentionArgs& a, int64_t i, Scratch& scratch) {
  const int64_t D = a.head_dim;
  const int64_t t = i / a.n_heads, h = i % a.n_heads;
  const int64_t kvh = h / std::max<int64_t>(1, a.n_heads / std::max<int64_t>(1, a.n_kv_heads));
  const int64_t kv_stride = a.n_kv_heads * D;  // between slots of one KV head
  const float* q = a.q + i * D;                // q: [T, n_heads, D], row (t, h)
  const float* kbase = a.k + kvh * D;          // k, v: [S, n_kv_heads, D], column kvh
  const float* vbase = a.v + kvh * D;
  float* o = a.out + i * D;

  // The mask from absolute positions (int64 so q_pos - k_pos cannot overflow).
  const int64_t qp = a.q_pos[t];
  int32_t* vis = scratch.visible.data();
  int64_t nv = 0;
  for (int64_t s = 0; s < a.S; ++s) {
    const int64_t kp = a.k_pos[s];
    if (kp >= 0 && kp <= qp && (a.window <= 0 || qp - kp < a.window)) {
      vis[nv++] = static_cast<int32_t>(s);
    }
  }
  if (nv == 0) {
    std::memset(o, 0, static_cast<size_t>(D) * sizeof(float));
    return;
  }

  // Scores, 4 keys per pass over q.
  float* p = scratch.p.data();
  int64_t j = 0;
  for (; j + 4 <= nv; j += 4) {
    Dot4(q, kbase + vis[j] * kv_stride, kbase + vis[j + 1] * kv_stride,
         kbase + vis[j + 2] * kv_stride, kbase + vis[j + 3] * kv_stride, D, p + j);
  }
  for (; j < nv; ++j) p[j] = Dot1(q, kbase + vis[j] * kv_stride, D);
  float max_s = -std::numeric_limits<float>::infinity();
  for (j = 0; j < nv; ++j) {
    p[j] *= a.scale;
    max_s = std::max(max_s, p[j]);
  }

  // p = exp(s - max) in SIMD; the sum in f64 (O(S), cheap next to the O(S * D) dots).
  const DF df;
  Transform2(df, p, p, nv, p, [max_s](DF d, VF s, VF) HWY_ATTR {
    return hn::Exp(d, hn::Sub(s, hn::Set(d, max_s)));
  });
  double denom = 0.0;
  for (j = 0; j < nv; ++j) denom += p[j];

  // o = sum_j p_j v_j / denom. The max key has p = 1, so denom >= 1.
  std::memset(o, 0, static_cast<size_t>(D) * sizeof(float));
  for (j = 0; j + 4 <= nv; j += 4) {
    Axpy4(p + j, vbase + vis[j] * kv_stride, vbase + vis[j + 1] * kv_stride,
          vbase + vis[j + 2] * kv_stride, vbase + vis[j + 3] * kv_stride, D, o);
  }
  for (; j < nv; ++j) {
    const float pz[4] = {p[j], 0.0f, 0.0f, 0.0f};
    const float* vj = vbase + vis[j] * kv_stride;
    Axpy4(pz, vj, vj, vj, vj, D, o);
  }
  const float inv = static_cast<float>(1.0 / denom);
  Transform2(df, o, o, D, o,
             [inv](DF d, VF v, VF) HWY_ATTR { return hn::Mul(v, hn::Set(d, inv)); });
}

void AttendRange(const AttentionArgs& a, int64_t begin, int64_t end) {
  thread_local Scratch scratch;
  const size_t S = static_cast<size_t>(a.S);
  if (scratch.visible.size() < S) {
    scratch.visible.resize(S);
    scratch.p.resize(S);
  }
  for (int64_t i = begin; i < end; ++i) AttendOne(a, i, scratch);
}

}  // namespace

void AttentionImpl(ThreadPool& pool, const AttentionArgs& a) {
  if (a.T <= 0 || a.n_heads <= 0 || a.head_dim <= 0) return;
  // Each (token, head) costs ~2 * S * head_dim multiply-adds; group pairs to ~32K of them.
  const int64_t work = std::max<int64_t>(1, 2 * a.S * a.head_dim);
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 15) / work);
  pool.ParallelFor(a.T * a.n_heads, grain, [&](int64_t begin, int64_t end) {
    AttendRange(a, begin, end);
  });
}

}  // namespace HWY_NAMESPACE
}  // namespace g4::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace g4::cpu {

HWY_EXPORT(AttentionImpl);

void Attention(ThreadPool& pool, const AttentionArgs& a) {
  HWY_DYNAMIC_DISPATCH(AttentionImpl)(pool, a);
}

}  // namespace g4::cpu
#endif  // HWY_ONCE
