// CPU Attention: softmax(q k^T * scale + mask) v per query head, Highway SIMD with runtime
// dispatch; must match g4::ref::Attention (src/kernels/ref/attention.cc, f64) to f32 accuracy,
// with exactly its mask: key slot s is visible to query t iff k_pos[s] >= 0 (filled slot),
// k_pos[s] <= q_pos[t] and, when window > 0, q_pos[t] - k_pos[s] < window; positions decide,
// never slot order (the KV cache may be a ring). GQA: query head h reads KV head
// h / (n_heads / n_kv_heads). Any head_dim (256, 512, odd) works: SIMD over head_dim with a
// scalar tail. A query that sees no key gets zeros.
// Per (token, group of query heads sharing a KV head): gather the visible slots, SIMD dot
// products 4 keys at a time for each head of the group (each K row read from memory once per
// group), a two-pass f32 softmax (max, then exp) per head, and SIMD accumulation of the V rows,
// again shared by the group. Work items (token, KV head, group) are split across the pool's
// threads; decode splits a KV head's query heads into as many groups as there are threads.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/cpu/export.h"
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
  std::vector<float> p;          // [heads of the group, S] scores, then softmax numerators
};

// Where AttendKeys leaves a group's result: normalised into a.out (whole key range), or, for a
// part of the keys (split decode), unnormalised per head: o[g * D ..] = sum_j p_j v_j with
// p_j = exp(s_j - m[g]), and l[g] = sum_j p_j; nv_out = the visible keys seen (0: m, l, o unset).
struct Partial {
  float* o = nullptr;
  float* m = nullptr;
  double* l = nullptr;
  int64_t nv = 0;
};

// Query heads [h0, h1) of token t, all reading KV head kvh, over key slots [s0, s1). The heads
// of a group share their K and V rows, so the loops run key block by key block and, inside, head
// by head: each K/V row comes from memory once per group and is re-read from L1 for the other
// heads (Gemma 4 has 8 query heads per KV head: attending head by head read the whole cache 8
// times per layer, which made decode at 2K context ~15% slower than at 41).
void AttendKeys(const AttentionArgs& a, int64_t t, int64_t kvh, int64_t h0, int64_t h1,
                int64_t s0, int64_t s1, Scratch& scratch, Partial* part) {
  const int64_t D = a.head_dim, G = h1 - h0;
  const int64_t kv_stride = a.n_kv_heads * D;  // between slots of one KV head
  const float* kbase = a.k + kvh * D;          // k, v: [S, n_kv_heads, D], column kvh
  const float* vbase = a.v + kvh * D;
  auto q_of = [&](int64_t g) { return a.q + (t * a.n_heads + h0 + g) * D; };  // q: [T, H, D]
  auto o_of = [&](int64_t g) {
    return part ? part->o + g * D : a.out + (t * a.n_heads + h0 + g) * D;
  };

  // The mask from absolute positions (int64 so q_pos - k_pos cannot overflow).
  const int64_t qp = a.q_pos[t];
  int32_t* vis = scratch.visible.data();
  int64_t nv = 0;
  for (int64_t s = s0; s < s1; ++s) {
    const int64_t kp = a.k_pos[s];
    if (kp >= 0 && kp <= qp && (a.window <= 0 || qp - kp < a.window)) {
      vis[nv++] = static_cast<int32_t>(s);
    }
  }
  if (part) part->nv = nv;
  if (nv == 0) {
    if (!part) {
      for (int64_t g = 0; g < G; ++g) std::memset(o_of(g), 0, static_cast<size_t>(D) * sizeof(float));
    }
    return;
  }

  // Scores, 4 keys per pass over each head's q; p row g belongs to head h0 + g.
  float* p = scratch.p.data();
  int64_t j = 0;
  for (; j + 4 <= nv; j += 4) {
    const float* k0 = kbase + vis[j] * kv_stride;
    const float* k1 = kbase + vis[j + 1] * kv_stride;
    const float* k2 = kbase + vis[j + 2] * kv_stride;
    const float* k3 = kbase + vis[j + 3] * kv_stride;
    for (int64_t g = 0; g < G; ++g) Dot4(q_of(g), k0, k1, k2, k3, D, p + g * nv + j);
  }
  for (; j < nv; ++j) {
    for (int64_t g = 0; g < G; ++g) p[g * nv + j] = Dot1(q_of(g), kbase + vis[j] * kv_stride, D);
  }

  // Per head: p = exp(s - max) in SIMD; the sum in f64 (O(S), cheap next to the O(S * D) dots).
  const DF df;
  double denom[64];  // heads per KV head never exceed this (checked by the caller)
  for (int64_t g = 0; g < G; ++g) {
    float* pg = p + g * nv;
    float max_s = -std::numeric_limits<float>::infinity();
    for (int64_t i = 0; i < nv; ++i) {
      pg[i] *= a.scale;
      max_s = std::max(max_s, pg[i]);
    }
    Transform2(df, pg, pg, nv, pg, [max_s](DF d, VF sv, VF) HWY_ATTR {
      return hn::Exp(d, hn::Sub(sv, hn::Set(d, max_s)));
    });
    double sum = 0.0;
    for (int64_t i = 0; i < nv; ++i) sum += pg[i];
    denom[g] = sum;  // the max key has p = 1, so sum >= 1
    if (part) {
      part->m[g] = max_s;
      part->l[g] = sum;
    }
    std::memset(o_of(g), 0, static_cast<size_t>(D) * sizeof(float));
  }

  // o_g = sum_j p_gj v_j (/ denom_g), V rows shared by the group's heads.
  for (j = 0; j + 4 <= nv; j += 4) {
    const float* v0 = vbase + vis[j] * kv_stride;
    const float* v1 = vbase + vis[j + 1] * kv_stride;
    const float* v2 = vbase + vis[j + 2] * kv_stride;
    const float* v3 = vbase + vis[j + 3] * kv_stride;
    for (int64_t g = 0; g < G; ++g) Axpy4(p + g * nv + j, v0, v1, v2, v3, D, o_of(g));
  }
  for (; j < nv; ++j) {
    const float* vj = vbase + vis[j] * kv_stride;
    for (int64_t g = 0; g < G; ++g) {
      const float pz[4] = {p[g * nv + j], 0.0f, 0.0f, 0.0f};
      Axpy4(pz, vj, vj, vj, vj, D, o_of(g));
    }
  }
  if (part) return;
  for (int64_t g = 0; g < G; ++g) {
    const float inv = static_cast<float>(1.0 / denom[g]);
    float* o = o_of(g);
    Transform2(df, o, o, D, o,
               [inv](DF d, VF v, VF) HWY_ATTR { return hn::Mul(v, hn::Set(d, inv)); });
  }
}

// Sizes the calling thread's scratch for S keys and groups of `group_size` heads.
Scratch& ScratchFor(int64_t S, int64_t group_size) {
  thread_local Scratch scratch;
  const size_t s = static_cast<size_t>(S);
  if (scratch.visible.size() < s) scratch.visible.resize(s);
  if (scratch.p.size() < s * static_cast<size_t>(group_size)) {
    scratch.p.resize(s * static_cast<size_t>(group_size));
  }
  return scratch;
}

// Work item i of T * n_kv_heads * groups: token, KV head and the group of query heads.
void AttendRange(const AttentionArgs& a, int64_t per_kv, int64_t groups, int64_t begin,
                 int64_t end) {
  const int64_t group_size = (per_kv + groups - 1) / groups;
  Scratch& scratch = ScratchFor(a.S, group_size);
  for (int64_t i = begin; i < end; ++i) {
    const int64_t gi = i % groups, kvh = (i / groups) % a.n_kv_heads;
    const int64_t t = i / (groups * a.n_kv_heads);
    const int64_t h0 = kvh * per_kv + gi * group_size;
    const int64_t h1 = std::min(kvh * per_kv + per_kv, h0 + group_size);
    if (h0 < h1) AttendKeys(a, t, kvh, h0, h1, 0, a.S, scratch, nullptr);
  }
}

// Decode with fewer (token, KV head) pairs than threads: every thread takes all the query heads
// of a pair over its own slice of the keys (so the cache is read once in all, not once per
// thread), then the slices' softmax parts are merged: with M = max_i m_i,
//   o = sum_i exp(m_i - M) o_i / sum_i exp(m_i - M) l_i.
void AttendSplitKeys(ThreadPool& pool, const AttentionArgs& a, int64_t per_kv) {
  const int64_t D = a.head_dim, pairs = a.T * a.n_kv_heads;
  const int64_t splits = std::max<int64_t>(1, std::min<int64_t>(pool.size() / pairs, a.S));
  const int64_t items = pairs * splits;
  thread_local std::vector<float> o_buf, m_buf;
  thread_local std::vector<double> l_buf;
  thread_local std::vector<int64_t> nv_buf;
  o_buf.resize(static_cast<size_t>(items * per_kv * D));
  m_buf.resize(static_cast<size_t>(items * per_kv));
  l_buf.resize(m_buf.size());
  nv_buf.resize(static_cast<size_t>(items));
  // The buffers are the calling thread's: hand the workers pointers, not the thread_local names
  // (which would name each worker's own, empty, instance).
  float* const o_parts = o_buf.data();
  float* const m_parts = m_buf.data();
  double* const l_parts = l_buf.data();
  int64_t* const nv_parts = nv_buf.data();
  pool.ParallelFor(items, 1, [&](int64_t begin, int64_t end) {
    Scratch& scratch = ScratchFor(a.S, per_kv);
    for (int64_t i = begin; i < end; ++i) {
      const int64_t pair = i / splits, sp = i % splits;
      const int64_t t = pair / a.n_kv_heads, kvh = pair % a.n_kv_heads;
      Partial part{o_parts + i * per_kv * D, m_parts + i * per_kv, l_parts + i * per_kv, 0};
      AttendKeys(a, t, kvh, kvh * per_kv, (kvh + 1) * per_kv, a.S * sp / splits,
                 a.S * (sp + 1) / splits, scratch, &part);
      nv_parts[i] = part.nv;
    }
  });
  for (int64_t pair = 0; pair < pairs; ++pair) {
    const int64_t t = pair / a.n_kv_heads, kvh = pair % a.n_kv_heads;
    for (int64_t g = 0; g < per_kv; ++g) {
      float* o = a.out + (t * a.n_heads + kvh * per_kv + g) * D;
      float M = -std::numeric_limits<float>::infinity();
      for (int64_t sp = 0; sp < splits; ++sp) {
        const int64_t i = pair * splits + sp;
        if (nv_buf[static_cast<size_t>(i)] > 0) M = std::max(M, m_buf[i * per_kv + g]);
      }
      std::memset(o, 0, static_cast<size_t>(D) * sizeof(float));
      if (M == -std::numeric_limits<float>::infinity()) continue;  // no visible key: zeros
      double denom = 0.0;
      for (int64_t sp = 0; sp < splits; ++sp) {
        const int64_t i = pair * splits + sp;
        if (nv_buf[static_cast<size_t>(i)] == 0) continue;
        const double w = std::exp(static_cast<double>(m_buf[i * per_kv + g]) - M);
        denom += w * l_buf[i * per_kv + g];
        const float* oi = o_buf.data() + (i * per_kv + g) * D;
        const float wf = static_cast<float>(w);
        for (int64_t d = 0; d < D; ++d) o[d] += wf * oi[d];
      }
      const float inv = static_cast<float>(1.0 / denom);
      for (int64_t d = 0; d < D; ++d) o[d] *= inv;
    }
  }
}

}  // namespace

void AttentionImpl(ThreadPool& pool, const AttentionArgs& a) {
  if (a.T <= 0 || a.n_heads <= 0 || a.head_dim <= 0) return;
  const int64_t n_kv = std::max<int64_t>(1, a.n_kv_heads);
  const int64_t per_kv = std::max<int64_t>(1, a.n_heads / n_kv);
  if (per_kv > 64 || per_kv * n_kv != a.n_heads) {  // not GQA-shaped: one head per item
    const int64_t grain =
        std::max<int64_t>(1, (int64_t{1} << 15) / std::max<int64_t>(1, 2 * a.S * a.head_dim));
    pool.ParallelFor(a.T * a.n_heads, grain, [&](int64_t begin, int64_t end) {
      Scratch& scratch = ScratchFor(a.S, 1);
      for (int64_t i = begin; i < end; ++i) {
        const int64_t t = i / a.n_heads, h = i % a.n_heads;
        AttendKeys(a, t, std::min(h / per_kv, n_kv - 1), h, h + 1, 0, a.S, scratch, nullptr);
      }
    });
    return;
  }
  const int64_t items_per_group = a.T * n_kv;
  // Decode over a long cache with fewer (token, KV head) pairs than threads: split the keys.
  if (items_per_group < pool.size() && a.S >= 256) {
    AttendSplitKeys(pool, a, per_kv);
    return;
  }
  // Otherwise split each KV head's query heads into just enough groups to give every thread
  // work (short caches); prefill keeps whole groups.
  const int64_t groups = std::clamp<int64_t>((pool.size() + items_per_group - 1) / items_per_group,
                                             1, per_kv);
  const int64_t group_size = (per_kv + groups - 1) / groups;
  // Each item costs ~2 * S * head_dim multiply-adds per head; group items to ~32K of them.
  const int64_t work = std::max<int64_t>(1, 2 * a.S * a.head_dim * group_size);
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 15) / work);
  pool.ParallelFor(items_per_group * groups, grain, [&](int64_t begin, int64_t end) {
    AttendRange(a, per_kv, groups, begin, end);
  });
}

}  // namespace HWY_NAMESPACE
}  // namespace g4::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace g4::cpu {

G4_CPU_EXPORT(Attention, (ThreadPool& pool, const AttentionArgs& a), (pool, a))

}  // namespace g4::cpu
#endif  // HWY_ONCE
