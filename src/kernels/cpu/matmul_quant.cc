// CPU MatMul (y = x @ w^T) for quantized weights (core/tensor.h QuantInfo): int4 groups in the
// compressed-tensors pack-quantized layout (W4A16) and int8 groups (the load-time LM head copy).
// Highway SIMD with runtime dispatch; must match g4::ref::MatMul (src/kernels/ref/matmul.cc),
// which dequantizes w[n, k] = q * scale[n, k / G] element by element, to f32-accumulation accuracy.
//
// Decode (T = 1) is a fused dequantize-and-dot: each row's bytes are loaded once, the nibbles are
// unpacked, offset (-8) and converted to f32 in registers, multiplied into a per-group
// accumulator, and the group's scale is applied once per group:
//   y[n] = sum_g scale[n, g] * sum_{k in g} q[n, k] * x[k].
// Nothing is written back to memory, so the kernel streams ~K/2 + 2K/G bytes per row. Byte j of
// an int4 row holds elements 2j (low nibble) and 2j+1 (high nibble); one vector of L bytes thus
// yields the L even and the L odd elements of a 2L-element chunk. Instead of re-interleaving the
// weights per row, x is permuted once per call to the same order (per 2L chunk of each group: the
// even elements, then the odd ones): a tiny pass over x, shared by every row. Four rows are
// processed together so four independent weight streams stay in flight; rows are split across
// the pool's threads.
//
// T > 1 (prefill chunks, batched decode): each thread dequantizes a block of rows into an f32
// panel (L2-resident, in the same permuted order as x) and runs the float GEMM tiles of
// matmul-inl.h over it, so every weight byte is read and unpacked once per call and each
// dequantized vector feeds several tokens.
//
// Groups that are not a multiple of 2L (int4) or L (int8) elements run their tail in scalar
// code; odd int4 groups (nibble pairs split across groups) take a scalar path for the whole row.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/cpu/export.h"
#include "kernels/cpu/kernels.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/matmul_quant.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "kernels/cpu/util-inl.h"
#include "kernels/cpu/matmul-inl.h"

HWY_BEFORE_NAMESPACE();
namespace g4::cpu {
namespace HWY_NAMESPACE {
namespace {

using DI = hn::RebindToSigned<DF>;
using DU = hn::RebindToUnsigned<DF>;
using D8 = hn::Rebind<uint8_t, DF>;  // Lanes(DF) bytes
using DI8 = hn::Rebind<int8_t, DF>;

// The shape of one quantized weight as the kernels see it.
struct QuantShape {
  const uint8_t* data;  // row n at data + n * row_bytes
  int64_t row_bytes;
  int64_t K, N, G, groups;  // G: group size, groups = K / G
  bool int4;
};

// Elements of a group covered by full SIMD chunks (2L for int4, L for int8); the rest of the
// group is a scalar tail.
int64_t SimdSpan(const QuantShape& q) {
  const int64_t chunk = static_cast<int64_t>(hn::Lanes(DF())) * (q.int4 ? 2 : 1);
  return q.G / chunk * chunk;
}

// The signed value of element k of an int4 or int8 row.
HWY_INLINE int QValue(const uint8_t* row, int64_t k, bool int4) {
  if (!int4) return static_cast<int8_t>(row[k]);
  return static_cast<int>((k & 1) ? (row[k >> 1] >> 4) : (row[k >> 1] & 0xf)) - 8;
}

// x [T, K] into xp [T, K] in kernel order: within each group, every full 2L chunk holds its even
// elements then its odd ones; group tails keep their natural order.
void PermuteX(const float* x, int64_t T, const QuantShape& q, float* xp) {
  const int64_t L = static_cast<int64_t>(hn::Lanes(DF()));
  const int64_t span = SimdSpan(q);
  for (int64_t t = 0; t < T; ++t) {
    const float* xt = x + t * q.K;
    float* pt = xp + t * q.K;
    for (int64_t g0 = 0; g0 < q.K; g0 += q.G) {
      for (int64_t c = 0; c < span; c += 2 * L) {
        for (int64_t j = 0; j < L; ++j) {
          pt[g0 + c + j] = xt[g0 + c + 2 * j];
          pt[g0 + c + L + j] = xt[g0 + c + 2 * j + 1];
        }
      }
      for (int64_t k = span; k < q.G; ++k) pt[g0 + k] = xt[g0 + k];
    }
  }
}

// b: Lanes(DF) bytes zero-extended to u32 lanes. lo / hi: the signed values (nibble - 8) of the
// low and high nibbles as f32 (the even and odd elements of the chunk). On AVX-512 a 16-entry
// table lookup (vpermps reads only the low 4 bits of each index lane) replaces mask, subtract and
// convert: 3 ops instead of 6 for 32 weights, and the matvec is ALU-bound on a 2-core machine
// otherwise. Other targets (8- or 4-lane tables cannot hold 16 entries) mask, offset, convert.
template <class V>
HWY_INLINE void Int4ToF32(DF df, V b, VF& lo, VF& hi) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
  (void)df;
  const __m512 table = matmul_detail::Int4Table();
  lo = VF{_mm512_permutexvar_ps(b.raw, table)};
  hi = VF{_mm512_permutexvar_ps(_mm512_srli_epi32(b.raw, 4), table)};
#else
  const DI di;
  const DU du;
  const hn::Vec<DI> eight = hn::Set(di, 8);
  lo = hn::ConvertTo(df, hn::Sub(hn::BitCast(di, hn::And(b, hn::Set(du, 0xf))), eight));
  hi = hn::ConvertTo(df, hn::Sub(hn::BitCast(di, hn::ShiftRight<4>(b)), eight));
#endif
}

// Decode: y[r] = dot(row n0 + r, x) for r < kR. w: row n0; s: the scales of row n0 ([groups]
// per row); xp: x in kernel order (int4) or natural order (int8). While a tile consumes its rows
// it prefetches the same offsets of the next tile's rows (kR rows on): the tiles of a thread are
// consecutive memory, and with 4 KiB pages (how checkpoint mmaps are mapped) the hardware
// prefetchers stop at every page boundary; measured on a 2-core AVX-512 VM, an int8 matvec went
// from ~63% to ~100% of a plain streaming read with it.
template <int kR, bool kInt4, typename TS>
HWY_INLINE void DecodeTile(const QuantShape& q, const uint8_t* HWY_RESTRICT w,
                           const TS* HWY_RESTRICT s, const float* HWY_RESTRICT xp,
                           float* HWY_RESTRICT y) {
  static_assert(kR >= 1 && kR <= 4, "tile is at most 4 rows");
  const DF df;
  const DI di;
  const DU du;
  const D8 d8;
  const DI8 di8;
  const int64_t L = static_cast<int64_t>(hn::Lanes(df));
  const int64_t span = SimdSpan(q), G = q.G, rb = q.row_bytes, groups = q.groups;
  const uint8_t* w0 = w;
  const uint8_t* w1 = w + (kR > 1 ? rb : 0);
  const uint8_t* w2 = w + (kR > 2 ? 2 * rb : 0);
  const uint8_t* w3 = w + (kR > 3 ? 3 * rb : 0);
  VF a0 = hn::Zero(df), a1 = a0, a2 = a0, a3 = a0;
  float tail[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int64_t g = 0; g < groups; ++g) {
    const float* xg = xp + g * G;
    VF d0 = hn::Zero(df), d1 = d0, d2 = d0, d3 = d0;
    if constexpr (kInt4) {
      const int64_t b0 = g * G / 2;  // G is even on this path
      for (int64_t c = 0; c < span; c += 2 * L) {
        const VF xe = hn::LoadU(df, xg + c);
        const VF xo = hn::LoadU(df, xg + c + L);
#define G4_INT4_ROW(r)                                                  \
  if constexpr (kR > r) {                                               \
    if ((b0 + c / 2) % 64 < L) hwy::Prefetch(w##r + kR * rb + b0 + c / 2); \
    const auto b = hn::PromoteTo(du, hn::LoadU(d8, w##r + b0 + c / 2)); \
    VF lo, hi;                                                          \
    Int4ToF32(df, b, lo, hi);                                           \
    d##r = hn::MulAdd(lo, xe, d##r);                                    \
    d##r = hn::MulAdd(hi, xo, d##r);                                    \
  }
        G4_INT4_ROW(0) G4_INT4_ROW(1) G4_INT4_ROW(2) G4_INT4_ROW(3)
#undef G4_INT4_ROW
      }
    } else {
      for (int64_t c = 0; c < span; c += L) {
        const VF xv = hn::LoadU(df, xg + c);
        const int64_t o = g * G + c;
#define G4_INT8_ROW(r)                                                                         \
  if constexpr (kR > r) {                                                                      \
    if (o % 64 < L) hwy::Prefetch(w##r + kR * rb + o);                                         \
    const auto v = hn::PromoteTo(di, hn::LoadU(di8, reinterpret_cast<const int8_t*>(w##r) + o)); \
    d##r = hn::MulAdd(hn::ConvertTo(df, v), xv, d##r);                                         \
  }
        G4_INT8_ROW(0) G4_INT8_ROW(1) G4_INT8_ROW(2) G4_INT8_ROW(3)
#undef G4_INT8_ROW
      }
    }
#define G4_SCALE_ROW(r)                                                                 \
  if constexpr (kR > r) {                                                               \
    const float sr = WidenScalar(s[r * groups + g]);                                    \
    a##r = hn::MulAdd(d##r, hn::Set(df, sr), a##r);                                     \
    if (span < G) {                                                                     \
      float acc = 0.0f;                                                                 \
      for (int64_t k = span; k < G; ++k) acc += QValue(w##r, g * G + k, kInt4) * xg[k]; \
      tail[r] += sr * acc;                                                              \
    }                                                                                   \
  }
    G4_SCALE_ROW(0) G4_SCALE_ROW(1) G4_SCALE_ROW(2) G4_SCALE_ROW(3)
#undef G4_SCALE_ROW
  }
  matmul_detail::StoreRowSums<kR>(df, a0, a1, a2, a3, y);
  for (int r = 0; r < kR; ++r) y[r] += tail[r];
}

// Row n fully in scalar code (int4 with an odd group size, where groups split bytes).
template <typename TS>
float ScalarRow(const QuantShape& q, const TS* scales, int64_t n, const float* x) {
  const uint8_t* row = q.data + n * q.row_bytes;
  float acc = 0.0f;
  for (int64_t g = 0; g < q.groups; ++g) {
    float d = 0.0f;
    for (int64_t k = g * q.G; k < (g + 1) * q.G; ++k) d += QValue(row, k, q.int4) * x[k];
    acc += WidenScalar(scales[n * q.groups + g]) * d;
  }
  return acc;
}

// ---- AVX-512 decode of int4 groups of 32 (the W4A16 format), K a multiple of 128 -------------
// One 64-byte load covers 4 groups of one row. Each of its 16 dword lanes holds 8 consecutive
// nibbles (elements 8j .. 8j+7); shifting the whole vector right by 4k puts nibble k of every lane
// in the low 4 bits, which vpermps uses as the index into a 16-entry table of the signed values
// (-8 .. 7). So 8 shift + lookup pairs give the 128 weights as 8 f32 vectors, vector k holding
// elements 8j + k, with no zero-extending shuffles: x is permuted to match once per call (block
// layout, PermuteXBlock128). Lanes 4i .. 4i+3 belong to group i of the block, so the partial sums
// are scaled by [s0 x4, s1 x4, s2 x4, s3 x4], built from the 4 scales with one broadcast load and
// one permute. Per 64 bytes and row: 8 lookups + 1 permute on the shuffle port, 7 shifts and 9
// FMAs elsewhere (vs 20 shuffle-port ops with a zero-extend per 16 bytes).
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
constexpr bool kHaveBlock128 = true;

// Scales of groups g .. g+3 as [s0 x4, s1 x4, s2 x4, s3 x4].
HWY_INLINE __m512 ScaleQuad(const hwy::bfloat16_t* s) {
  uint64_t bits;
  std::memcpy(&bits, s, 8);
  // Word 2j+1 (the high half of dword lane j) <- word j / 4 of the broadcast quad; low halves 0.
  alignas(64) static constexpr uint16_t kIdx[32] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 1, 0, 1,
                                                   0, 2, 0, 2, 0, 2, 0, 2, 0, 3, 0, 3, 0, 3, 0, 3};
  const __m512i idx = _mm512_load_si512(kIdx);
  return _mm512_castsi512_ps(
      _mm512_maskz_permutexvar_epi16(0xAAAAAAAAu, idx, _mm512_set1_epi64(static_cast<int64_t>(bits))));
}
HWY_INLINE __m512 ScaleQuad(const float* s) {
  const __m512i idx = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
  return _mm512_permutexvar_ps(idx, _mm512_broadcast_f32x4(_mm_loadu_ps(s)));
}
HWY_INLINE __m512 ScaleQuad(const hwy::float16_t* s) {
  const __m512i idx = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
  const __m128 f = _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(s)));
  return _mm512_permutexvar_ps(idx, _mm512_broadcast_f32x4(f));
}

// y[r] = dot(row r, x) for the kR rows at w (row_bytes apart), scales s (groups apart). The
// same bytes of the next tile's rows are prefetched as these are consumed (see DecodeTile).
template <int kR, typename TS>
HWY_INLINE void DecodeTileBlock128(const QuantShape& q, const uint8_t* HWY_RESTRICT w,
                                   const TS* HWY_RESTRICT s, const float* HWY_RESTRICT xp,
                                   float* HWY_RESTRICT y) {
  const __m512 table = matmul_detail::Int4Table();
  const int64_t rb = q.row_bytes, groups = q.groups, blocks = q.K / 128;
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (int64_t b = 0; b < blocks; ++b) {
    const matmul_detail::X128 x = matmul_detail::LoadX128(xp + b * 128);
#define G4_BLOCK_ROW(r)                                                 \
  if constexpr (kR > r) {                                               \
    hwy::Prefetch(w + (r + kR) * rb + b * 64);                          \
    const __m512i v = _mm512_loadu_si512(w + r * rb + b * 64);          \
    const __m512 d = matmul_detail::Int4LaneDots(v, x, table);          \
    a##r = _mm512_fmadd_ps(d, ScaleQuad(s + r * groups + b * 4), a##r); \
  }
    G4_BLOCK_ROW(0) G4_BLOCK_ROW(1) G4_BLOCK_ROW(2) G4_BLOCK_ROW(3)
#undef G4_BLOCK_ROW
  }
  matmul_detail::StoreRowSums<kR>(a0, a1, a2, a3, y);
}
#else
constexpr bool kHaveBlock128 = false;
#endif

// Whether the block-128 decode path applies (int4, groups of 32, K a multiple of 128).
bool UseBlock128(const QuantShape& q, int64_t T) {
  return kHaveBlock128 && T == 1 && q.int4 && q.G == 32 && q.K % 128 == 0;
}

// x [K] into xp [K] in block layout: xp[128 b + 16 k + j] = x[128 b + 8 j + k].
void PermuteXBlock128(const float* x, int64_t K, float* xp) {
  for (int64_t b = 0; b < K; b += 128) {
    for (int64_t j = 0; j < 16; ++j) {
      for (int64_t k = 0; k < 8; ++k) xp[b + 16 * k + j] = x[b + 8 * j + k];
    }
  }
}

// Decode rows [begin, end).
template <bool kInt4, typename TS>
void DecodeRows(const QuantShape& q, const TS* scales, const float* xp, int64_t begin,
                int64_t end, float* y) {
  using matmul_detail::ForEachRowTile;
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
  if (kInt4 && UseBlock128(q, 1)) {
    ForEachRowTile(begin, end, [&](auto rows, int64_t n) HWY_ATTR {
      DecodeTileBlock128<decltype(rows)::value>(q, q.data + n * q.row_bytes, scales + n * q.groups,
                                                xp, y + n);
    });
    return;
  }
#endif
  ForEachRowTile(begin, end, [&](auto rows, int64_t n) HWY_ATTR {
    DecodeTile<decltype(rows)::value, kInt4>(q, q.data + n * q.row_bytes, scales + n * q.groups, xp,
                                             y + n);
  });
}

// Rows [n0, n0 + rows) dequantized to f32 into panel [rows, K], in the order of xp.
template <typename TS>
void DequantizeRows(const QuantShape& q, const TS* scales, int64_t n0, int64_t rows,
                    float* HWY_RESTRICT panel) {
  const DF df;
  const DI di;
  const DU du;
  const D8 d8;
  const DI8 di8;
  const int64_t L = static_cast<int64_t>(hn::Lanes(df));
  const int64_t span = SimdSpan(q);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t n = n0 + r;
    const uint8_t* row = q.data + n * q.row_bytes;
    float* out = panel + r * q.K;
    for (int64_t g = 0; g < q.groups; ++g) {
      const float sr = WidenScalar(scales[n * q.groups + g]);
      const VF sv = hn::Set(df, sr);
      const int64_t e0 = g * q.G;
      if (q.int4) {
        for (int64_t c = 0; c < span; c += 2 * L) {
          const auto b = hn::PromoteTo(du, hn::LoadU(d8, row + (e0 + c) / 2));
          VF lo, hi;
          Int4ToF32(df, b, lo, hi);
          hn::StoreU(hn::Mul(lo, sv), df, out + e0 + c);
          hn::StoreU(hn::Mul(hi, sv), df, out + e0 + c + L);
        }
      } else {
        for (int64_t c = 0; c < span; c += L) {
          const auto v = hn::PromoteTo(di, hn::LoadU(di8, reinterpret_cast<const int8_t*>(row) + e0 + c));
          hn::StoreU(hn::Mul(hn::ConvertTo(df, v), sv), df, out + e0 + c);
        }
      }
      for (int64_t k = span; k < q.G; ++k) {
        out[e0 + k] = static_cast<float>(QValue(row, e0 + k, q.int4)) * sr;
      }
    }
  }
}

template <typename TS>
void QuantMatMulTyped(ThreadPool& pool, const QuantShape& q, const TS* scales, const float* x,
                      int64_t T, float* y) {
  // x in kernel order, shared read-only by the workers; reused across calls.
  thread_local std::vector<float> xp_buf;
  const float* xp = x;
  const bool odd_int4 = q.int4 && (q.G % 2 != 0);
  if (q.int4 && !odd_int4) {
    xp_buf.resize(static_cast<size_t>(T * q.K));
    if (UseBlock128(q, T)) {
      PermuteXBlock128(x, q.K, xp_buf.data());
    } else {
      PermuteX(x, T, q, xp_buf.data());
    }
    xp = xp_buf.data();
  }
  if (odd_int4) {  // rare (never in released checkpoints): scalar, row by row
    pool.ParallelFor(q.N, 16, [&](int64_t begin, int64_t end) {
      for (int64_t n = begin; n < end; ++n) {
        for (int64_t t = 0; t < T; ++t) y[t * q.N + n] = ScalarRow(q, scales, n, x + t * q.K);
      }
    });
    return;
  }
  if (T == 1) {
    pool.ParallelFor(q.N, matmul_detail::WorkGrain(q.K, 4), [&](int64_t begin, int64_t end) {
      if (q.int4) {
        DecodeRows<true>(q, scales, xp, begin, end, y);
      } else {
        DecodeRows<false>(q, scales, xp, begin, end, y);
      }
    });
    return;
  }
  matmul_detail::ParallelPanels(pool, xp, T, q.K, q.N, y,
                                [&](int64_t n0, int64_t nr, float* panel)
                                    HWY_ATTR { DequantizeRows(q, scales, n0, nr, panel); });
}

}  // namespace

// w: quantized [N, K] (core/tensor.h); x: [T, K] f32; y: [T, N] f32.
void QuantMatMulImpl(ThreadPool& pool, const TensorView& w, const float* x, int64_t T, float* y) {
  const int64_t N = w.dim(0), K = w.dim(1);
  if (T <= 0 || N <= 0) return;
  const int64_t G = w.quant.group_size;
  if (K <= 0 || G <= 0 || K % G != 0) {  // callers validate; never read out of bounds
    std::memset(y, 0, static_cast<size_t>(T * N) * sizeof(float));
    return;
  }
  const QuantShape q{static_cast<const uint8_t*>(w.data), w.quant.row_bytes, K, N, G, K / G,
                     w.quant.kind == QuantKind::kInt4Group};
  ForFloatDType(w.quant.scale_dtype, w.quant.scales, y, T * N,
                [&](const auto* scales) HWY_ATTR { QuantMatMulTyped(pool, q, scales, x, T, y); });
}

}  // namespace HWY_NAMESPACE
}  // namespace g4::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace g4::cpu {

G4_CPU_EXPORT(QuantMatMul,
              (ThreadPool& pool, const TensorView& w, const float* x, int64_t T, float* y),
              (pool, w, x, T, y))

}  // namespace g4::cpu
#endif  // HWY_ONCE
