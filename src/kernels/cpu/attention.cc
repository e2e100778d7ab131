// CPU Attention: softmax(q k^T * scale + mask) v per query head, Highway SIMD with runtime
// dispatch; must match g4::ref::Attention (src/kernels/ref/attention.cc, f64) to f32 accuracy,
// with exactly its mask: key slot s is visible to query t iff k_pos[s] >= 0 (filled slot),
// k_pos[s] <= q_pos[t] and, when window > 0, q_pos[t] - k_pos[s] < window; positions decide,
// never slot order (the KV cache may be a ring). GQA: query head h reads KV head
// h / (n_heads / n_kv_heads). Any head_dim (256, 512, odd) works: SIMD over head_dim with a
// scalar tail. A query that sees no key gets zeros. K/V stored as bf16 are widened in registers
// (exact), so a bf16 cache is read at half the bytes with the same f32 arithmetic; q8 blocks are
// widened and multiplied by their scale in registers the same way (the f32 of scale * q).
// Per (token, group of query heads sharing a KV head): gather the visible slots, SIMD dot
// products 2 keys x up to 8 heads at a time (each K vector loaded once for the group's heads), a
// two-pass f32 softmax (max, then exp) per head, and SIMD accumulation of the V rows in key
// blocks with the heads' sums in registers, again shared by the group. Work items (token, KV
// head, group) are split across the pool's threads; decode over a long cache splits the keys;
// prefill over more than one key block runs tiles of tokens over key blocks, the softmax online.
// A paged cache (ops/kv_blocks.h) is the same loops: the gather turns slots into entries.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/q8_blocks.h"
#include "kernels/cpu/export.h"
#include "kernels/cpu/kernels.h"
#include "ops/kv_blocks.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/attention.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/cache_control.h"
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
#include "kernels/cpu/util-inl.h"

HWY_BEFORE_NAMESPACE();
namespace g4::cpu {
namespace HWY_NAMESPACE {
namespace {

// Query heads one pass handles: 2 keys x kPassHeads accumulators plus the loads must fit the
// vector registers (32 on AVX-512, 16 on AVX2 and below).
constexpr int64_t kPassHeads = HWY_MAX_BYTES >= 64 ? 8 : 4;

// Rows this many keys ahead are prefetched, one line for each line the loop reads, spread
// through the loop: the hardware streamers alone left a decode step waiting on its K/V loads
// (BM_AttentionDecode, bf16, head dim 512 over 2048 positions, 2-core AVX2 VM: 453 us without,
// 320 us with whole rows prefetched a few keys ahead). On a 2-core AVX-512 VM those bursts of
// whole rows stalled on the fill buffers instead (34% of Scores' samples on a prefetch): a line
// per line read took the same benchmark from 505-585 to 349-372 us (f32 636 -> 436-473 us;
// none at all: 550-562 / 715-763 us; 8 or 16 keys ahead: no better). On a 2-core Zen 4 VM
// the L1 prefetches alone still left f32 at 12-16 GB/s, a third of its read probe: a second
// prefetch into L2, kPrefetchL2Keys ahead, keeps more lines in flight than L1's fill buffers
// hold, and the L1 one then only waits on L2 (f32, D 256 / 512 over 2048 positions: 282-294 /
// 431-482 us -> 175-204 / 300-389; bf16 and q8, bound by their arithmetic, where they were).
constexpr int64_t kPrefetchKeys = 2;
constexpr int64_t kPrefetchL2Keys = 16;

// The line at p into L2 (prefetcht1 on x86; a no-op where the target has no such hint).
HWY_INLINE void PrefetchL2(const void* p) { __builtin_prefetch(p, 0, 2); }

// One entry's K or V row of one KV head as stored: f32 or bf16 values, or (int8_t) q8 values
// with their blocks' scales.
template <class KT>
struct Row {
  const KT* p;
  const float* scale;  // q8 only: [D / kQ8Block]
};

// A KV head's K or V over all entries: entry s's row starts at base + s * stride (scales: scale
// + s * scale_stride).
template <class KT>
struct Rows {
  const KT* base;
  int64_t stride;
  const float* scale = nullptr;
  int64_t scale_stride = 0;
  Row<KT> operator[](int64_t s) const {
    if constexpr (std::is_same_v<KT, int8_t>) return {base + s * stride, scale + s * scale_stride};
    return {base + s * stride, nullptr};
  }
  // The values of key j of the gathered keys vis[0, nv) (the last one for j past them): the
  // row a prefetch ahead of key j's loads brings in.
  const KT* Ahead(const int32_t* vis, int64_t nv, int64_t j) const {
    return (*this)[vis[std::min(nv - 1, j)]].p;
  }
};

// Lanes(df) values of r from element d (d % Lanes(df) == 0) as f32.
template <class KT>
HWY_INLINE VF LoadRow(DF df, Row<KT> r, int64_t d) {
  if constexpr (std::is_same_v<KT, int8_t>) {
    const hn::Rebind<int8_t, DF> d8;
    const hn::Rebind<int32_t, DF> d32;
    const VF x = hn::ConvertTo(df, hn::PromoteTo(d32, hn::LoadU(d8, r.p + d)));
    return hn::Mul(x, hn::Set(df, r.scale[d / kQ8Block]));  // a vector never spans two blocks
  } else {
    return LoadWidened(df, r.p + d);
  }
}

// Element e of r as f32 (the tails).
template <class KT>
HWY_INLINE float RowAt(Row<KT> r, int64_t e) {
  if constexpr (std::is_same_v<KT, int8_t>) {
    return r.scale[e / kQ8Block] * static_cast<float>(r.p[e]);
  } else {
    return WidenScalar(r.p[e]);
  }
}

// f(std::integral_constant<int, i>) for i in [0, N), unrolled in the source: arrays of
// accumulators indexed by these constants stay registers. (GCC 12 kept Scores' 8 accumulators,
// indexed by a loop over the heads, in registers but also stored all 8 to the stack on every
// step of D: 8 stores to 8 FMAs, BM_AttentionPrefill at 47-49 GFLOP/s on a 2-core Zen 3.)
template <int N, class F>
HWY_INLINE void Unrolled(const F& f) {
  [&]<int... I>(std::integer_sequence<int, I...>) HWY_ATTR {
    (f(std::integral_constant<int, I>()), ...);
  }(std::make_integer_sequence<int, N>());
}

// p[g * p_stride + j] = dot(q[g], k row vis[j]) for the NH heads g and the keys j in [0, nv).
// Two keys at a time: each K vector is loaded (and widened) once for all NH heads, and the
// 2 * NH independent accumulators keep the FMA units busy (4 keys x 1 head left them waiting
// on one dependent chain per key and re-widened every K row for each head). q[g]: [D].
template <int NH, class KT>
void Scores(const float* const* q, const Rows<KT>& k, const int32_t* vis, int64_t nv, int64_t D,
            float* p, int64_t p_stride) {
  const DF df;
  const int64_t L = static_cast<int64_t>(hn::Lanes(df));
  const float* qg[NH];
  Unrolled<NH>([&](auto g) HWY_ATTR { qg[g] = q[g]; });
  for (int64_t j = 0; j < nv; j += 2) {
    const bool two = j + 1 < nv;
    const Row<KT> k0 = k[vis[j]];
    const Row<KT> k1 = two ? k[vis[j + 1]] : k0;
    // The rows kPrefetchKeys keys ahead, a line for each line read here.
    const KT* f0 = k.Ahead(vis, nv, j + kPrefetchKeys);
    const KT* f1 = k.Ahead(vis, nv, j + kPrefetchKeys + 1);
    const KT* l0 = k.Ahead(vis, nv, j + kPrefetchL2Keys);
    const KT* l1 = k.Ahead(vis, nv, j + kPrefetchL2Keys + 1);
    VF a0[NH], a1[NH];
    Unrolled<NH>([&](auto g) HWY_ATTR { a0[g] = a1[g] = hn::Zero(df); });
    int64_t d = 0;
    for (; d + L <= D; d += L) {
      if ((d * static_cast<int64_t>(sizeof(KT))) % 64 == 0) {
        hwy::Prefetch(f0 + d);
        hwy::Prefetch(f1 + d);
        PrefetchL2(l0 + d);
        PrefetchL2(l1 + d);
      }
      const VF kv0 = LoadRow(df, k0, d), kv1 = LoadRow(df, k1, d);
      Unrolled<NH>([&](auto g) HWY_ATTR {
        const VF qv = hn::LoadU(df, qg[g] + d);
        a0[g] = hn::MulAdd(qv, kv0, a0[g]);
        a1[g] = hn::MulAdd(qv, kv1, a1[g]);
      });
    }
    Unrolled<NH>([&](auto g) HWY_ATTR {
      float s0 = ReduceSum(df, a0[g]), s1 = ReduceSum(df, a1[g]);
      for (int64_t e = d; e < D; ++e) {
        s0 += qg[g][e] * RowAt(k0, e);
        s1 += qg[g][e] * RowAt(k1, e);
      }
      p[g * p_stride + j] = s0;
      if (two) p[g * p_stride + j + 1] = s1;
    });
  }
}

// o[g] += sum_j p[g * p_stride + j] * V row vis[j] for the NH heads g and keys j in [0, nv).
// Four keys at a time, their rows read in order (the rows kPrefetchKeys ahead prefetched a line
// per line read): each V vector is loaded (and widened) once for all NH heads, whose o rows stay
// in L1. o[g]: [D].
template <int NH, class KT>
void AccumulateV(const float* p, int64_t p_stride, const Rows<KT>& v, const int32_t* vis,
                 int64_t nv, int64_t D, float* const* o) {
  const DF df;
  const int64_t L = static_cast<int64_t>(hn::Lanes(df));
  float* og[NH];  // a local copy: o[g] itself was reloaded after every store
  Unrolled<NH>([&](auto g) HWY_ATTR { og[g] = o[g]; });
  for (int64_t j = 0; j < nv; j += 4) {
    const int64_t nk = std::min<int64_t>(4, nv - j);
    Row<KT> r[4];
    float w[NH][4];  // p of each head for the 4 keys; 0 past nv (the row read is a valid one)
    for (int64_t i = 0; i < 4; ++i) {
      r[i] = v[vis[j + std::min(i, nk - 1)]];
      for (int g = 0; g < NH; ++g) w[g][i] = i < nk ? p[g * p_stride + j + i] : 0.0f;
    }
    const KT* fr[4];  // the rows kPrefetchKeys keys ahead, a line for each line read here
    const KT* lr[4];  // and kPrefetchL2Keys ahead, into L2
    for (int64_t i = 0; i < 4; ++i) {
      fr[i] = v.Ahead(vis, nv, j + kPrefetchKeys + i);
      lr[i] = v.Ahead(vis, nv, j + kPrefetchL2Keys + i);
    }
    int64_t d = 0;
    for (; d + L <= D; d += L) {
      if ((d * static_cast<int64_t>(sizeof(KT))) % 64 == 0) {
        for (int64_t i = 0; i < 4; ++i) {
          hwy::Prefetch(fr[i] + d);
          PrefetchL2(lr[i] + d);
        }
      }
      const VF v0 = LoadRow(df, r[0], d), v1 = LoadRow(df, r[1], d), v2 = LoadRow(df, r[2], d),
               v3 = LoadRow(df, r[3], d);
      // One chain of 4 per head, in key order. Two chains of two were faster, but their f32
      // rounding put a MoE test model's packed and row experts 0.5 of max |logit| apart in the
      // -O1 sanitizer build (GgufMoeTwinTest; a router top-k near a tie, most likely).
      for (int g = 0; g < NH; ++g) {
        VF acc = hn::LoadU(df, og[g] + d);
        acc = hn::MulAdd(hn::Set(df, w[g][0]), v0, acc);
        acc = hn::MulAdd(hn::Set(df, w[g][1]), v1, acc);
        acc = hn::MulAdd(hn::Set(df, w[g][2]), v2, acc);
        acc = hn::MulAdd(hn::Set(df, w[g][3]), v3, acc);
        hn::StoreU(acc, df, og[g] + d);
      }
    }
    for (; d < D; ++d) {
      for (int g = 0; g < NH; ++g) {
        og[g][d] += w[g][0] * RowAt(r[0], d) + w[g][1] * RowAt(r[1], d) +
                    w[g][2] * RowAt(r[2], d) + w[g][3] * RowAt(r[3], d);
      }
    }
  }
}

// f(std::integral_constant<int, n>) for n in [1, kPassHeads]: a pass's head count as a
// template argument, so its accumulators are registers.
template <class F>
void WithHeads(int64_t n, const F& f) {
  switch (n) {
    case 1: return f(std::integral_constant<int, 1>());
    case 2: return f(std::integral_constant<int, 2>());
    case 3: return f(std::integral_constant<int, 3>());
    case 4: return f(std::integral_constant<int, 4>());
  }
  if constexpr (kPassHeads > 4) {
    switch (n) {
      case 5: return f(std::integral_constant<int, 5>());
      case 6: return f(std::integral_constant<int, 6>());
      case 7: return f(std::integral_constant<int, 7>());
      default: return f(std::integral_constant<int, 8>());
    }
  }
}

// Scores of the heads g in [0, G) in passes of kPassHeads: p[g * p_stride + j] = dot(q_of(g),
// K row vis[j]) for j in [0, nv).
template <class KT, class QOf>
void HeadScores(int64_t G, const QOf& q_of, const Rows<KT>& k, const int32_t* vis, int64_t nv,
                int64_t D, float* p, int64_t p_stride) {
  const float* qs[kPassHeads];
  for (int64_t g0 = 0; g0 < G; g0 += kPassHeads) {
    const int64_t n = std::min(kPassHeads, G - g0);
    for (int64_t g = 0; g < n; ++g) qs[g] = q_of(g0 + g);
    WithHeads(n, [&](auto nh) {
      Scores<decltype(nh)::value>(qs, k, vis, nv, D, p + g0 * p_stride, p_stride);
    });
  }
}

// o_of(g) += sum_j p[g * p_stride + j] * V row vis[j] for the heads g in [0, G), in passes.
template <class KT, class OOf>
void HeadValues(int64_t G, const float* p, int64_t p_stride, const Rows<KT>& v,
                const int32_t* vis, int64_t nv, int64_t D, const OOf& o_of) {
  float* os[kPassHeads];
  for (int64_t g0 = 0; g0 < G; g0 += kPassHeads) {
    const int64_t n = std::min(kPassHeads, G - g0);
    for (int64_t g = 0; g < n; ++g) os[g] = o_of(g0 + g);
    WithHeads(n, [&](auto nh) {
      AccumulateV<decltype(nh)::value>(p + g0 * p_stride, p_stride, v, vis, nv, D, os);
    });
  }
}

// p[i] *= scale for i in [0, n); returns their max. In SIMD: the scalar loop waited on one
// dependent max per key and head (with the f64 sum below: BM_AttentionDecode/256/512, q8,
// 30-35 -> 28 us on a 2-core Zen 5 VM).
float ScaleScores(float* p, int64_t n, float scale) {
  const DF df;
  const int64_t L = static_cast<int64_t>(hn::Lanes(df));
  const VF s = hn::Set(df, scale);
  VF vmax = hn::Set(df, -std::numeric_limits<float>::infinity());
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    const VF v = hn::Mul(hn::LoadU(df, p + i), s);
    hn::StoreU(v, df, p + i);
    vmax = hn::Max(vmax, v);
  }
  float max_s = hn::GetLane(hn::MaxOfLanes(df, vmax));
  for (; i < n; ++i) {
    p[i] *= scale;
    max_s = std::max(max_s, p[i]);
  }
  return max_s;
}

// p[i] = exp(p[i] - max_s) in SIMD; returns their sum: f32 lanes over 4 vectors at a time, each
// partial added in f64 (the scalar loop was one dependent f64 add per key and head).
double ExpScores(float* p, int64_t n, float max_s) {
  const DF df;
  const int64_t L = static_cast<int64_t>(hn::Lanes(df));
  Transform2(df, p, p, n, p, [max_s](DF d, VF sv, VF) HWY_ATTR {
    return hn::Exp(d, hn::Sub(sv, hn::Set(d, max_s)));
  });
  double sum = 0.0;
  int64_t i = 0;
  for (; i + 4 * L <= n; i += 4 * L) {
    const VF a = hn::Add(hn::LoadU(df, p + i), hn::LoadU(df, p + i + L));
    const VF b = hn::Add(hn::LoadU(df, p + i + 2 * L), hn::LoadU(df, p + i + 3 * L));
    sum += ReduceSum(df, hn::Add(a, b));
  }
  for (; i < n; ++i) sum += p[i];
  return sum;
}

// x[0, n) *= f.
void ScaleRow(float* x, int64_t n, float f) {
  const DF df;
  Transform2(df, x, x, n, x, [f](DF d, VF v, VF) HWY_ATTR { return hn::Mul(v, hn::Set(d, f)); });
}

// Per-thread scratch, reused across calls so decode does not allocate per layer.
struct Scratch {
  std::vector<int32_t> visible;  // [block] the visible slots' entries
  std::vector<float> p;          // [heads of the group, block] scores, then softmax numerators
};

// Keys a decode pass scores before it sums their values: 8 heads' scores are 16 KB.
constexpr int64_t kDecodeKeyBlock = 512;

// Whether a query at position qp sees slot s. The mask comes from absolute positions (int64 so
// q_pos - k_pos cannot overflow).
HWY_INLINE bool SlotVisible(const AttentionArgs& a, int64_t qp, int64_t s) {
  const int64_t kp = a.k_pos[s];
  return kp >= 0 && kp <= qp && (a.window <= 0 || qp - kp < a.window);
}

// vis[0 .. n) = where the K/V of the slots in [b0, b1) that a query at position qp sees are
// (their entries, ops/kv_blocks.h: the slots themselves without a block table); returns n. The
// loops below read rows by entry, so a paged cache costs one table read per block here.
int64_t VisibleSlots(const AttentionArgs& a, int64_t qp, int64_t b0, int64_t b1, int32_t* vis) {
  int64_t nv = 0;
  if (a.block_table != nullptr && b0 < b1) {
    // Block by block: within one, an entry is its slot plus the block's shift.
    const int64_t bs = a.block_size;
    for (int64_t s = b0; s < b1;) {
      const int64_t end = std::min(b1, (s / bs + 1) * bs);
      const int64_t shift = KvEntry(a.block_table, a.block_size, s) - s;
      for (; s < end; ++s) {
        if (SlotVisible(a, qp, s)) vis[nv++] = static_cast<int32_t>(s + shift);
      }
    }
    return nv;
  }
  for (int64_t s = b0; s < b1; ++s) {
    if (SlotVisible(a, qp, s)) vis[nv++] = static_cast<int32_t>(s);
  }
  return nv;
}

// The slots [lo, hi) from the first to the last one a query at position qp sees (lo == hi: none).
// A full layer's array is reserved past its filled slots (it grows by half at a time, and a
// kept cache keeps its array), so split decode cuts this range, not [0, S): halving [0, S) gave
// one thread every filled key of a cache grown to 1.5x its positions, the other a third as many.
// Scans only the empty ends.
std::pair<int64_t, int64_t> VisibleExtent(const AttentionArgs& a, int64_t qp) {
  int64_t hi = a.S;
  while (hi > 0 && !SlotVisible(a, qp, hi - 1)) --hi;
  int64_t lo = 0;
  while (lo < hi && !SlotVisible(a, qp, lo)) ++lo;
  return {lo, hi};
}

// One block of one head's online softmax: pg's nv scores scaled, then made exp(s - m) against
// the running max m. When the block raises m, the output so far (o: [D]) and its sum l are
// rescaled to the new max first (nothing to rescale before the first block: l is 0 until then,
// at least 1 after, the max key having p = 1).
void SoftmaxBlock(float* pg, int64_t nv, float scale, float* o, int64_t D, float& m, double& l) {
  const float block_max = ScaleScores(pg, nv, scale);
  if (block_max > m) {
    if (l != 0.0) {
      const float f = std::exp(m - block_max);
      l *= f;
      ScaleRow(o, D, f);
    }
    m = block_max;
  }
  l += ExpScores(pg, nv, m);
}

// Where AttendKeys leaves a group's result: normalised into a.out (whole key range), or, for a
// part of the keys (split decode), unnormalised per head: o[g * D ..] = sum_j p_j v_j with
// p_j = exp(s_j - m[g]), and l[g] = sum_j p_j; nv = the visible keys seen (0: m is -inf, l 0).
struct Partial {
  float* o = nullptr;
  float* m = nullptr;
  double* l = nullptr;
  int64_t nv = 0;
};

// a's K and V as KT (float, hwy::bfloat16_t or int8_t): [entries, n_kv_heads, D] each (entries
// = S without a block table); q8's scales [entries, n_kv_heads, D / kQ8Block] each.
template <class KT>
struct Kv {
  const KT* k;
  const KT* v;
  const float* k_scale = nullptr;
  const float* v_scale = nullptr;

  // KV head kvh's K and V rows (a: [S, n_kv_heads, D]).
  Rows<KT> K(const AttentionArgs& a, int64_t kvh) const { return Of(a, k, k_scale, kvh); }
  Rows<KT> V(const AttentionArgs& a, int64_t kvh) const { return Of(a, v, v_scale, kvh); }

 private:
  static Rows<KT> Of(const AttentionArgs& a, const KT* x, const float* scale, int64_t kvh) {
    const int64_t D = a.head_dim, blocks = D / kQ8Block;
    return {x + kvh * D, a.n_kv_heads * D, scale != nullptr ? scale + kvh * blocks : nullptr,
            a.n_kv_heads * blocks};
  }
};

// Query heads [h0, h1) of token t, all reading KV head kvh, over key slots [s0, s1). The heads
// of a group share their K and V rows, and Scores / AccumulateV load each K and V vector once
// for all of them (Gemma 4 has 8 query heads per KV head: attending head by head read the whole
// cache 8 times per layer, which made decode at 2K context ~15% slower than at 41).
template <class KT>
void AttendKeys(const AttentionArgs& a, Kv<KT> kv, int64_t t, int64_t kvh, int64_t h0,
                int64_t h1, int64_t s0, int64_t s1, Scratch& scratch, Partial* part) {
  const int64_t D = a.head_dim, G = h1 - h0;
  const Rows<KT> krows = kv.K(a, kvh), vrows = kv.V(a, kvh);
  auto q_of = [&](int64_t g) { return a.q + (t * a.n_heads + h0 + g) * D; };  // q: [T, H, D]
  auto o_of = [&](int64_t g) {
    return part ? part->o + g * D : a.out + (t * a.n_heads + h0 + g) * D;
  };

  // Keys in blocks, the softmax online (as AttendTokenTile): a block's scores stay in L1 from
  // HeadScores to HeadValues, and the scratch stays 16 KB a thread whatever the cache (scoring
  // the whole slice first took 8 heads x S floats: 4 MB a thread at 128K). Speed was the same
  // within noise (E2B decode at 131000 positions, q8 cache: 4.29-4.72 tok/s, 4.50-4.90 before).
  const int64_t qp = a.q_pos[t];
  int32_t* vis = scratch.visible.data();
  float* p = scratch.p.data();  // [G, kDecodeKeyBlock]; p row g belongs to head h0 + g
  float m[64];                  // heads per KV head never exceed this (checked by the caller)
  double l[64];
  for (int64_t g = 0; g < G; ++g) {
    m[g] = -std::numeric_limits<float>::infinity();
    l[g] = 0.0;
    std::memset(o_of(g), 0, static_cast<size_t>(D) * sizeof(float));
  }
  int64_t seen = 0;
  for (int64_t b0 = s0; b0 < s1; b0 += kDecodeKeyBlock) {
    const int64_t b1 = std::min(s1, b0 + kDecodeKeyBlock);
    const int64_t nv = VisibleSlots(a, qp, b0, b1, vis);
    if (nv == 0) continue;
    seen += nv;
    HeadScores(G, q_of, krows, vis, nv, D, p, kDecodeKeyBlock);
    for (int64_t g = 0; g < G; ++g) {
      SoftmaxBlock(p + g * kDecodeKeyBlock, nv, a.scale, o_of(g), D, m[g], l[g]);
    }
    // o_g += sum_j p_gj v_j, V rows shared by the group's heads.
    HeadValues(G, p, kDecodeKeyBlock, vrows, vis, nv, D, o_of);
  }
  if (part) {
    part->nv = seen;
    for (int64_t g = 0; g < G; ++g) {
      part->m[g] = m[g];
      part->l[g] = l[g];
    }
    return;
  }
  // o / l; a query that saw no key keeps its zeros (the max key has p = 1, so l >= 1 otherwise).
  if (seen == 0) return;
  for (int64_t g = 0; g < G; ++g) ScaleRow(o_of(g), D, static_cast<float>(1.0 / l[g]));
}

// Sizes the calling thread's scratch for blocks of S keys and groups of `group_size` heads.
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
template <class KT>
void AttendRange(const AttentionArgs& a, Kv<KT> kv, int64_t per_kv, int64_t groups,
                 int64_t begin, int64_t end) {
  const int64_t group_size = (per_kv + groups - 1) / groups;
  Scratch& scratch = ScratchFor(kDecodeKeyBlock, group_size);
  for (int64_t i = begin; i < end; ++i) {
    const int64_t gi = i % groups, kvh = (i / groups) % a.n_kv_heads;
    const int64_t t = i / (groups * a.n_kv_heads);
    const int64_t h0 = kvh * per_kv + gi * group_size;
    const int64_t h1 = std::min(kvh * per_kv + per_kv, h0 + group_size);
    if (h0 < h1) AttendKeys(a, kv, t, kvh, h0, h1, 0, a.S, scratch, nullptr);
  }
}

// Prefill over a long cache, flash-attention style: the keys in blocks of kKeyBlock, each
// block's K and V rows brought in once for a tile of kTokenTile tokens (they stay in L2 while
// the tile's tokens use them), the softmax online: per (token, head) a running max m and sum l
// beside the unnormalised output in a.out, rescaled when m grows. Attending token by token read
// the whole cache from memory once per token: 128 MB per global layer and token of E2B at 32K.
constexpr int64_t kKeyBlock = 64;
constexpr int64_t kTokenTile = 8;

// Tokens [t0, t1) and the query heads [h0, h1) of KV head kvh (h1 - h0 <= 64), over all slots.
template <class KT>
void AttendTokenTile(const AttentionArgs& a, Kv<KT> kv, int64_t t0, int64_t t1, int64_t kvh,
                     int64_t h0, int64_t h1, Scratch& scratch) {
  const int64_t D = a.head_dim, G = h1 - h0;
  const Rows<KT> krows = kv.K(a, kvh), vrows = kv.V(a, kvh);
  // q, out: [T, H, D]; head h0 + g of token t.
  auto row = [&](int64_t t, int64_t g) { return (t * a.n_heads + h0 + g) * D; };
  float m[kTokenTile][64];
  double l[kTokenTile][64];
  for (int64_t t = t0; t < t1; ++t) {
    for (int64_t g = 0; g < G; ++g) {
      m[t - t0][g] = -std::numeric_limits<float>::infinity();
      l[t - t0][g] = 0.0;
      std::memset(a.out + row(t, g), 0, static_cast<size_t>(D) * sizeof(float));
    }
  }
  int32_t* vis = scratch.visible.data();
  float* p = scratch.p.data();  // [G, kKeyBlock]
  for (int64_t b0 = 0; b0 < a.S; b0 += kKeyBlock) {
    const int64_t b1 = std::min(a.S, b0 + kKeyBlock);
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t nv = VisibleSlots(a, a.q_pos[t], b0, b1, vis);
      if (nv == 0) continue;
      HeadScores(G, [&](int64_t g) { return a.q + row(t, g); }, krows, vis, nv, D, p, kKeyBlock);
      for (int64_t g = 0; g < G; ++g) {
        SoftmaxBlock(p + g * kKeyBlock, nv, a.scale, a.out + row(t, g), D, m[t - t0][g],
                     l[t - t0][g]);
      }
      HeadValues(G, p, kKeyBlock, vrows, vis, nv, D, [&](int64_t g) { return a.out + row(t, g); });
    }
  }
  // o / l; a query that saw no key keeps its zeros.
  for (int64_t t = t0; t < t1; ++t) {
    for (int64_t g = 0; g < G; ++g) {
      const double sum = l[t - t0][g];
      if (sum != 0.0) ScaleRow(a.out + row(t, g), D, static_cast<float>(1.0 / sum));
    }
  }
}

// Decode with fewer (token, KV head) pairs than threads: every thread takes all the query heads
// of a pair over its own slice of the keys (so the cache is read once in all, not once per
// thread), then the slices' softmax parts are merged: with M = max_i m_i,
//   o = sum_i exp(m_i - M) o_i / sum_i exp(m_i - M) l_i.
template <class KT>
void AttendSplitKeys(ThreadPool& pool, const AttentionArgs& a, Kv<KT> kv, int64_t per_kv) {
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
  thread_local std::vector<std::pair<int64_t, int64_t>> extent_buf;  // per token
  extent_buf.resize(static_cast<size_t>(a.T));
  for (int64_t t = 0; t < a.T; ++t) extent_buf[t] = VisibleExtent(a, a.q_pos[t]);
  const std::pair<int64_t, int64_t>* const extent = extent_buf.data();
  pool.ParallelFor(items, 1, [&](int64_t begin, int64_t end) {
    Scratch& scratch = ScratchFor(kDecodeKeyBlock, per_kv);
    for (int64_t i = begin; i < end; ++i) {
      const int64_t pair = i / splits, sp = i % splits;
      const int64_t t = pair / a.n_kv_heads, kvh = pair % a.n_kv_heads;
      Partial part{o_parts + i * per_kv * D, m_parts + i * per_kv, l_parts + i * per_kv, 0};
      const auto [lo, hi] = extent[t];
      AttendKeys(a, kv, t, kvh, kvh * per_kv, (kvh + 1) * per_kv, lo + (hi - lo) * sp / splits,
                 lo + (hi - lo) * (sp + 1) / splits, scratch, &part);
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

template <class KT>
void Attend(ThreadPool& pool, const AttentionArgs& a, Kv<KT> kv) {
  const int64_t n_kv = std::max<int64_t>(1, a.n_kv_heads);
  const int64_t per_kv = std::max<int64_t>(1, a.n_heads / n_kv);
  if (per_kv > 64 || per_kv * n_kv != a.n_heads) {  // not GQA-shaped: one head per item
    const int64_t grain =
        std::max<int64_t>(1, (int64_t{1} << 15) / std::max<int64_t>(1, 2 * a.S * a.head_dim));
    pool.ParallelFor(a.T * a.n_heads, grain, [&](int64_t begin, int64_t end) {
      Scratch& scratch = ScratchFor(kDecodeKeyBlock, 1);
      for (int64_t i = begin; i < end; ++i) {
        const int64_t t = i / a.n_heads, h = i % a.n_heads;
        AttendKeys(a, kv, t, std::min(h / per_kv, n_kv - 1), h, h + 1, 0, a.S, scratch,
                   nullptr);
      }
    });
    return;
  }
  const int64_t items_per_group = a.T * n_kv;
  // Decode over a long cache with fewer (token, KV head) pairs than threads: split the keys.
  if (items_per_group < pool.size() && a.S >= 256) {
    AttendSplitKeys(pool, a, kv, per_kv);
    return;
  }
  // Prefill over more than one key block: token tiles, each reading a block once.
  if (a.T > 1 && a.S > kKeyBlock) {
    const int64_t tiles = (a.T + kTokenTile - 1) / kTokenTile;
    // Claimed pieces: a causal tile costs more than the one before it (a static half of a
    // 512-token chunk at the start of a prompt has a third of the other's keys).
    pool.ParallelForClaimed(tiles * n_kv, 1, [&](int64_t begin, int64_t end) {
      Scratch& scratch = ScratchFor(kKeyBlock, per_kv);
      for (int64_t i = begin; i < end; ++i) {
        const int64_t tile = i / n_kv, kvh = i % n_kv;
        AttendTokenTile(a, kv, tile * kTokenTile, std::min(a.T, (tile + 1) * kTokenTile), kvh,
                        kvh * per_kv, (kvh + 1) * per_kv, scratch);
      }
    });
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
    AttendRange(a, kv, per_kv, groups, begin, end);
  });
}

}  // namespace

void AttentionImpl(ThreadPool& pool, const AttentionArgs& a) {
  if (a.T <= 0 || a.n_heads <= 0 || a.head_dim <= 0) return;
  if (a.k16 != nullptr) {
    return Attend(pool, a,
                  Kv<hwy::bfloat16_t>{reinterpret_cast<const hwy::bfloat16_t*>(a.k16),
                                      reinterpret_cast<const hwy::bfloat16_t*>(a.v16)});
  }
  if (a.k8 != nullptr) {
    return Attend(pool, a, Kv<int8_t>{a.k8, a.v8, a.k_scale8, a.v_scale8});
  }
  Attend(pool, a, Kv<float>{a.k, a.v});
}

}  // namespace HWY_NAMESPACE
}  // namespace g4::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace g4::cpu {

G4_CPU_EXPORT(Attention, (ThreadPool& pool, const AttentionArgs& a), (pool, a))

}  // namespace g4::cpu
#endif  // HWY_ONCE
