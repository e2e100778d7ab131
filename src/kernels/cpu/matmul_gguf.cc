// CPU MatMul (y = x @ w^T) for GGUF block weights (core/tensor.h QuantKind::kQ4_0 .. kQ6_K): w is
// [N, K], each row K / elems blocks with their scales inside. Highway SIMD with runtime dispatch;
// must match g4::ref::MatMul (block by block through core/gguf_blocks.h, f64 accumulation) to
// f32-accumulation accuracy.
//
// Every kind has a block "visitor" that unpacks a block a vector of Lanes elements at a time and
// hands each dequantized f32 vector (elements o .. o + L - 1 of the row, natural order) to a sink,
// tagged with a stream number 0..3 so that a dot-product sink can keep independent accumulators
// (one FMA chain per stream). Lanes are capped at 16 so that one vector never straddles a
// block's sub-blocks (16 elements in Q6_K). The sinks:
//  * decode (T = 1): acc[stream] += v * x[o .. o + L), one row at a time, each row prefetching
//    the next as it starts. Q4_0 and Q8_0 (the bulk of Gemma GGUFs) have their own 4-row tiles
//    instead, which leave the block scale d out of the inner products and apply it once per block:
//      y[n] = sum_b d[n, b] * sum_{j < 32} q[n, b, j] * x[32 b + j]
//    (with Q4_0's 16-entry table lookup on AVX-512, as kernels/cpu/matmul_quant.cc does for int4;
//    the scales of 64 blocks are converted in one pass first). On AVX-512 with K % 128 == 0, Q4_0
//    takes 4 blocks per step in the int4g32 kernel's layout (DecodeTileQ4_0Quad). Measured on the
//    2-core AVX-512 VM (benchmarks/kernels/matmul_gguf_bench.cc BM_MatVecQ4_0VsInt4, thread CPU
//    time, one thread, alternating binaries): 0.78-0.84 of the int4g32 kernel's speed at the same
//    4.5 bits per weight (0.76-0.79 with one block per step). What is left: the f16 scale
//    gathers (~5%: 0.83-0.88 with them removed) and four 16-byte loads per 72 bytes, a quarter
//    of them split across cache lines, where int4 has one aligned 64-byte load.
//  * prefill (T > 1): blocks of rows are dequantized once into an L2-resident f32 panel and the
//    float GEMM tiles of matmul-inl.h run over it, so each weight byte is unpacked once per call
//    and every dequantized vector feeds all T tokens.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/gguf_blocks.h"
#include "kernels/cpu/export.h"
#include "kernels/cpu/kernels.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/matmul_gguf.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "kernels/cpu/util-inl.h"
#include "kernels/cpu/matmul-inl.h"

HWY_BEFORE_NAMESPACE();
namespace g4::cpu {
namespace HWY_NAMESPACE {
namespace {

// Lanes capped at 16 (see the top of the file): these shadow util-inl.h's full-width DF, VF.
using DF = hn::CappedTag<float, 16>;
using VF = hn::Vec<DF>;
using DI = hn::RebindToSigned<DF>;
using DU = hn::RebindToUnsigned<DF>;
using VU = hn::Vec<DU>;
using D8 = hn::Rebind<uint8_t, DF>;
using DI8 = hn::Rebind<int8_t, DF>;

template <int kStream>
using Stream = std::integral_constant<int, kStream>;

// The f16 at p (a block's d / dmin / m) as f32; F16C on x86 AVX2 and up.
HWY_INLINE float Half(const uint8_t* p) {
  uint16_t bits;
  std::memcpy(&bits, p, 2);
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
  return _cvtsh_ss(bits);
#else
  return F16ToF32(bits);
#endif
}

// L bytes at p, zero-extended to u32 lanes.
HWY_INLINE VU LoadBytes(const uint8_t* p) { return hn::PromoteTo(DU(), hn::LoadU(D8(), p)); }

// Unsigned small integers in u32 lanes as f32 (exact).
HWY_INLINE VF ToF32(VU v) { return hn::ConvertTo(DF(), hn::BitCast(DI(), v)); }

// b: L bytes of packed nibbles (u32 lanes); lo / hi: the nibbles minus 8 as f32. On AVX-512 a
// 16-entry table lookup (vpermps reads the low 4 bits of each index) replaces mask, offset and
// convert.
HWY_INLINE void NibblesMinus8(VU b, VF& lo, VF& hi) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
  const __m512 table = matmul_detail::Int4Table();
  lo = VF{_mm512_permutexvar_ps(b.raw, table)};
  hi = VF{_mm512_permutexvar_ps(_mm512_srli_epi32(b.raw, 4), table)};
#else
  const DF df;
  const VF eight = hn::Set(df, 8.0f);
  lo = hn::Sub(ToF32(hn::And(b, hn::Set(DU(), 0xf))), eight);
  hi = hn::Sub(ToF32(hn::ShiftRight<4>(b)), eight);
#endif
}

// ---- Block visitors: f(Stream<s>, o, v) for every vector v of dequantized elements o .. o+L-1
// of a block starting at row element `base`. Values are those of core/gguf_blocks.h up to the
// rounding of fused multiply-adds.

// Q4_0: half d; u8 qs[16]; y[j] = d (lo(qs[j]) - 8), y[j + 16] = d (hi(qs[j]) - 8).
template <class F>
HWY_INLINE void VisitQ4_0(const uint8_t* b, int64_t base, F& f) {
  const int64_t L = static_cast<int64_t>(hn::Lanes(DF()));
  const VF d = hn::Set(DF(), Half(b));
  for (int64_t c = 0; c < 16; c += L) {
    VF lo, hi;
    NibblesMinus8(LoadBytes(b + 2 + c), lo, hi);
    f(Stream<0>(), base + c, hn::Mul(lo, d));
    f(Stream<1>(), base + 16 + c, hn::Mul(hi, d));
  }
}

// Q4_1: half d; half m; u8 qs[16]; y = d q + m.
template <class F>
HWY_INLINE void VisitQ4_1(const uint8_t* b, int64_t base, F& f) {
  const int64_t L = static_cast<int64_t>(hn::Lanes(DF()));
  const VF d = hn::Set(DF(), Half(b)), m = hn::Set(DF(), Half(b + 2));
  for (int64_t c = 0; c < 16; c += L) {
    const VU q = LoadBytes(b + 4 + c);
    f(Stream<0>(), base + c, hn::MulAdd(ToF32(hn::And(q, hn::Set(DU(), 0xf))), d, m));
    f(Stream<1>(), base + 16 + c, hn::MulAdd(ToF32(hn::ShiftRight<4>(q)), d, m));
  }
}

// Q5_0 / Q5_1: half d; [half m]; u8 qh[4]; u8 qs[16]: nibble | (bit j of qh) << 4; Q5_0 y = d
// (q - 16), Q5_1 y = d q + m.
template <bool kHasMin, class F>
HWY_INLINE void VisitQ5(const uint8_t* b, int64_t base, F& f) {
  const DU du;
  const int64_t L = static_cast<int64_t>(hn::Lanes(DF()));
  const uint8_t* p = b + (kHasMin ? 4 : 2);
  uint32_t qh32;
  std::memcpy(&qh32, p, 4);
  const VU qh = hn::Set(du, qh32), one = hn::Set(du, 1), mask = hn::Set(du, 0xf);
  const VF d = hn::Set(DF(), Half(b));
  const VF m = hn::Set(DF(), kHasMin ? Half(b + 2) : -16.0f * Half(b));
  for (int64_t c = 0; c < 16; c += L) {
    const VU q = LoadBytes(p + 4 + c);
    const VU h0 = hn::ShiftLeft<4>(hn::And(qh >> hn::Iota(du, static_cast<uint32_t>(c)), one));
    const VU h1 = hn::ShiftLeft<4>(hn::And(qh >> hn::Iota(du, static_cast<uint32_t>(c + 16)), one));
    f(Stream<0>(), base + c, hn::MulAdd(ToF32(hn::Or(hn::And(q, mask), h0)), d, m));
    f(Stream<1>(), base + 16 + c, hn::MulAdd(ToF32(hn::Or(hn::ShiftRight<4>(q), h1)), d, m));
  }
}

// Q8_0: half d; i8 qs[32]; y = d q.
template <class F>
HWY_INLINE void VisitQ8_0(const uint8_t* b, int64_t base, F& f) {
  const DF df;
  const int64_t L = static_cast<int64_t>(hn::Lanes(df));
  const VF d = hn::Set(df, Half(b));
  const int8_t* qs = reinterpret_cast<const int8_t*>(b + 2);
  for (int64_t c = 0; c < 16; c += L) {
    f(Stream<0>(), base + c, hn::Mul(hn::ConvertTo(df, hn::PromoteTo(DI(), hn::LoadU(DI8(), qs + c))), d));
    f(Stream<1>(), base + 16 + c,
      hn::Mul(hn::ConvertTo(df, hn::PromoteTo(DI(), hn::LoadU(DI8(), qs + 16 + c))), d));
  }
}

// Q4_K / Q5_K: half d; half dmin; u8 scales[12]; [u8 qh[32]]; u8 qs[128]. Chunk c (64 values):
// low nibbles of qs[32c ..] are sub-block 2c, high nibbles 2c + 1 (Q5_K: plus bit 2c / 2c + 1 of
// qh[l] as the 5th bit); y = d sc q - dmin m.
template <bool kQ5, class F>
HWY_INLINE void VisitQK(const uint8_t* b, int64_t base, F& f) {
  const DU du;
  const int64_t L = static_cast<int64_t>(hn::Lanes(DF()));
  const float d = Half(b), dmin = Half(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* qh = b + 16;
  const uint8_t* qs = b + (kQ5 ? 48 : 16);
  const VU mask = hn::Set(du, 0xf), one = hn::Set(du, 1);
  for (int c = 0; c < 4; ++c) {
    int sc0, m0, sc1, m1;
    GgufScaleMinK4(scales, 2 * c, &sc0, &m0);
    GgufScaleMinK4(scales, 2 * c + 1, &sc1, &m1);
    const VF d0 = hn::Set(DF(), d * static_cast<float>(sc0)), n0 = hn::Set(DF(), dmin * static_cast<float>(m0));
    const VF d1 = hn::Set(DF(), d * static_cast<float>(sc1)), n1 = hn::Set(DF(), dmin * static_cast<float>(m1));
    for (int64_t l = 0; l < 32; l += L) {
      const VU q = LoadBytes(qs + 32 * c + l);
      VU lo = hn::And(q, mask), hi = hn::ShiftRight<4>(q);
      if constexpr (kQ5) {
        const VU h = LoadBytes(qh + l);
        lo = hn::Or(lo, hn::ShiftLeft<4>(hn::And(hn::ShiftRightSame(h, 2 * c), one)));
        hi = hn::Or(hi, hn::ShiftLeft<4>(hn::And(hn::ShiftRightSame(h, 2 * c + 1), one)));
      }
      f(Stream<0>(), base + 64 * c + l, hn::MulSub(ToF32(lo), d0, n0));
      f(Stream<1>(), base + 64 * c + 32 + l, hn::MulSub(ToF32(hi), d1, n1));
    }
  }
}

// Q6_K: u8 ql[128]; u8 qh[64]; i8 scales[16]; half d. Half h of 128 values: for l < 32, the four
// 6-bit values at l, l + 32, l + 64, l + 96 come from the nibbles of ql[l], ql[l + 32] and the
// 2-bit fields of qh[l]; value i uses scale i / 16 (constant within a vector of <= 16 lanes).
template <class F>
HWY_INLINE void VisitQ6_K(const uint8_t* b, int64_t base, F& f) {
  const DI di;
  const DU du;
  const int64_t L = static_cast<int64_t>(hn::Lanes(DF()));
  const float d = Half(b + 208);
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
  const VU mask = hn::Set(du, 0xf), three = hn::Set(du, 3);
  const hn::Vec<DI> k32 = hn::Set(di, 32);
  auto value = [&](VU low4, VU high2) {
    return hn::ConvertTo(DF(), hn::Sub(hn::BitCast(di, hn::Or(low4, hn::ShiftLeft<4>(high2))), k32));
  };
  for (int h = 0; h < 2; ++h) {
    const uint8_t* ql = b + 64 * h;
    const uint8_t* qh = b + 128 + 32 * h;
    const int8_t* s = sc + 8 * h;
    const int64_t o = base + 128 * h;
    for (int64_t l = 0; l < 32; l += L) {
      const int i = static_cast<int>(l / 16);
      const VU a = LoadBytes(ql + l), c = LoadBytes(ql + 32 + l), e = LoadBytes(qh + l);
      const VF q1 = value(hn::And(a, mask), hn::And(e, three));
      const VF q2 = value(hn::And(c, mask), hn::And(hn::ShiftRight<2>(e), three));
      const VF q3 = value(hn::ShiftRight<4>(a), hn::And(hn::ShiftRight<4>(e), three));
      const VF q4 = value(hn::ShiftRight<4>(c), hn::ShiftRight<6>(e));
      f(Stream<0>(), o + l, hn::Mul(q1, hn::Set(DF(), d * static_cast<float>(s[i + 0]))));
      f(Stream<1>(), o + l + 32, hn::Mul(q2, hn::Set(DF(), d * static_cast<float>(s[i + 2]))));
      f(Stream<2>(), o + l + 64, hn::Mul(q3, hn::Set(DF(), d * static_cast<float>(s[i + 4]))));
      f(Stream<3>(), o + l + 96, hn::Mul(q4, hn::Set(DF(), d * static_cast<float>(s[i + 6]))));
    }
  }
}

// Calls the kind's visitor on every block of one row.
template <class F>
HWY_INLINE void VisitRow(QuantKind kind, const uint8_t* row, int64_t blocks, F& f) {
  switch (kind) {
    case QuantKind::kQ4_0:
      for (int64_t b = 0; b < blocks; ++b) VisitQ4_0(row + b * 18, b * 32, f);
      break;
    case QuantKind::kQ4_1:
      for (int64_t b = 0; b < blocks; ++b) VisitQ4_1(row + b * 20, b * 32, f);
      break;
    case QuantKind::kQ5_0:
      for (int64_t b = 0; b < blocks; ++b) VisitQ5<false>(row + b * 22, b * 32, f);
      break;
    case QuantKind::kQ5_1:
      for (int64_t b = 0; b < blocks; ++b) VisitQ5<true>(row + b * 24, b * 32, f);
      break;
    case QuantKind::kQ8_0:
      for (int64_t b = 0; b < blocks; ++b) VisitQ8_0(row + b * 34, b * 32, f);
      break;
    case QuantKind::kQ4_K:
      for (int64_t b = 0; b < blocks; ++b) VisitQK<false>(row + b * 144, b * 256, f);
      break;
    case QuantKind::kQ5_K:
      for (int64_t b = 0; b < blocks; ++b) VisitQK<true>(row + b * 176, b * 256, f);
      break;
    case QuantKind::kQ6_K:
      for (int64_t b = 0; b < blocks; ++b) VisitQ6_K(row + b * 210, b * 256, f);
      break;
    default:
      break;
  }
}

// The shape of one GGUF weight as the kernels see it.
struct GgufShape {
  QuantKind kind;
  const uint8_t* data;  // row n at data + n * row_bytes
  int64_t row_bytes, K, N, blocks;
};

// Sink: stores each vector into a row of the f32 panel.
struct StoreSink {
  float* out;
  template <int kS>
  HWY_INLINE void operator()(Stream<kS>, int64_t o, VF v) {
    hn::StoreU(v, DF(), out + o);
  }
};

// Sink: one accumulator per stream, acc[s] += v * x[o ..].
struct DotSink {
  const float* x;
  VF a0, a1, a2, a3;
  template <int kS>
  HWY_INLINE void operator()(Stream<kS>, int64_t o, VF v) {
    const VF xv = hn::LoadU(DF(), x + o);
    if constexpr (kS == 0) a0 = hn::MulAdd(v, xv, a0);
    if constexpr (kS == 1) a1 = hn::MulAdd(v, xv, a1);
    if constexpr (kS == 2) a2 = hn::MulAdd(v, xv, a2);
    if constexpr (kS == 3) a3 = hn::MulAdd(v, xv, a3);
  }
};

// Decode rows [begin, end) of any kind, one row at a time through the visitor.
void DecodeRowsGeneric(const GgufShape& q, const float* x, int64_t begin, int64_t end, float* y) {
  const DF df;
  for (int64_t n = begin; n < end; ++n) {
    const uint8_t* row = q.data + n * q.row_bytes;
    if (n + 1 < end) {  // the next row, a line at a time, while this one is consumed
      for (int64_t o = 0; o < q.row_bytes; o += 64) hwy::Prefetch(row + q.row_bytes + o);
    }
    DotSink s{x, hn::Zero(df), hn::Zero(df), hn::Zero(df), hn::Zero(df)};
    VisitRow(q.kind, row, q.blocks, s);
    y[n] = ReduceSum(df, hn::Add(hn::Add(s.a0, s.a1), hn::Add(s.a2, s.a3)));
  }
}

// Blocks per pass of the 4-row decode tiles: their f16 scales are converted up front, so the
// inner loop broadcasts each from memory (a load, not vector ALU work: a scalar f16 conversion
// and broadcast per block and row cost ~4 ALU uops, as much as unpacking the block's 32 weights).
constexpr int64_t kScaleChunk = 64;

// ds[r][j] = d of block b0 + j of row r (rows rb apart, d the f16 at the start of each block of
// `bytes` bytes), for j < nb <= kScaleChunk.
template <int kR>
HWY_INLINE void BlockScales(const uint8_t* w, int64_t rb, int64_t bytes, int64_t b0, int64_t nb,
                            float (*ds)[kScaleChunk]) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
  // One masked 16-lane gather of the dwords at the block starts (4 bytes < a block: in bounds),
  // truncated to their low halves (d) and converted: scalar gathers or compiler-vectorized
  // inserts cost as much as unpacking the weights (profiled).
  const __m512i offsets = _mm512_mullo_epi32(
      _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
      _mm512_set1_epi32(static_cast<int>(bytes)));
  for (int r = 0; r < kR; ++r) {
    const uint8_t* p = w + r * rb + b0 * bytes;
    for (int64_t j = 0; j < nb; j += 16) {
      const __mmask16 m = nb - j >= 16 ? __mmask16{0xFFFF} : static_cast<__mmask16>((1u << (nb - j)) - 1);
      const __m512i g = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m, offsets, p + j * bytes, 1);
      _mm512_store_ps(ds[r] + j, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(g)));
    }
  }
#else
  const DF df;
  const hn::Rebind<hwy::float16_t, DF> df16;
  const int64_t L = static_cast<int64_t>(hn::Lanes(df));
  HWY_ALIGN uint16_t bits[kScaleChunk] = {};  // nb rounded up to L <= 64: zeros past nb
  for (int r = 0; r < kR; ++r) {
    const uint8_t* p = w + r * rb + b0 * bytes;
    for (int64_t j = 0; j < nb; ++j) std::memcpy(&bits[j], p + j * bytes, 2);
    for (int64_t j = 0; j < nb; j += L) {
      hn::StoreU(hn::PromoteTo(df, hn::LoadU(df16, reinterpret_cast<const hwy::float16_t*>(bits + j))), df,
                 ds[r] + j);
    }
  }
#endif
}

// Q4_0 and Q8_0 decode: kR rows (row_bytes apart) at w;
//   y[r] = sum_b d[r, b] * dot(q[r, b], x_b),
// the block dot products without d coming from Dot (Q4_0Dot, Q8_0Dot). The same offsets of the
// next tile's rows are prefetched: the two lines covering Dot::kPrefetchBlocks blocks, once every
// that many blocks (a branch with a short period; "is a line boundary in this block" has period
// 32 and mispredicted enough to show in profiles).
template <int kR, class Dot>
HWY_INLINE void DecodeTileScaled(const GgufShape& q, const uint8_t* HWY_RESTRICT w,
                                 const float* HWY_RESTRICT x, float* HWY_RESTRICT y) {
  const DF df;
  const Dot dot;
  const int64_t rb = q.row_bytes;
  VF a0 = hn::Zero(df), a1 = a0, a2 = a0, a3 = a0;
  HWY_ALIGN float ds[kR][kScaleChunk];
  for (int64_t b0 = 0; b0 < q.blocks; b0 += kScaleChunk) {
    const int64_t nb = std::min(kScaleChunk, q.blocks - b0);
    BlockScales<kR>(w, rb, Dot::kBytes, b0, nb, ds);
    for (int64_t j = 0; j < nb; ++j) {
      const int64_t b = b0 + j;
      const float* xb = x + 32 * b;
      const int64_t o = Dot::kBytes * b;
      const bool prefetch = j % Dot::kPrefetchBlocks == 0;
#define G4_SCALED_ROW(r)                                        \
  if constexpr (kR > r) {                                       \
    const uint8_t* p = w + r * rb + o;                          \
    if (prefetch) {                                             \
      hwy::Prefetch(p + kR * rb);                               \
      hwy::Prefetch(p + kR * rb + 64);                          \
    }                                                           \
    a##r = hn::MulAdd(dot(p, xb), hn::Set(df, ds[r][j]), a##r); \
  }
      G4_SCALED_ROW(0) G4_SCALED_ROW(1) G4_SCALED_ROW(2) G4_SCALED_ROW(3)
#undef G4_SCALED_ROW
    }
  }
  matmul_detail::StoreRowSums<kR>(df, a0, a1, a2, a3, y);
}

// Q4_0: sum_j (q[j] - 8) x_b[j] over the nibbles of the 18-byte block at p. Prefetch every 4th
// block (72 bytes).
struct Q4_0Dot {
  static constexpr int64_t kBytes = 18, kPrefetchBlocks = 4;
  HWY_INLINE VF operator()(const uint8_t* p, const float* xb) const {
    const DF df;
    const int64_t L = static_cast<int64_t>(hn::Lanes(df));
    VF s = hn::Zero(df);
    for (int64_t c = 0; c < 16; c += L) {
      VF lo, hi;
      NibblesMinus8(LoadBytes(p + 2 + c), lo, hi);
      s = hn::MulAdd(lo, hn::LoadU(df, xb + c), s);
      s = hn::MulAdd(hi, hn::LoadU(df, xb + 16 + c), s);
    }
    return s;
  }
};

// Q8_0: sum_j q[j] x_b[j] over the signed bytes of the 34-byte block at p. Prefetch every 2nd
// block (68 bytes).
struct Q8_0Dot {
  static constexpr int64_t kBytes = 34, kPrefetchBlocks = 2;
  HWY_INLINE VF operator()(const uint8_t* p, const float* xb) const {
    const DF df;
    const DI di;
    const DI8 di8;
    const int64_t L = static_cast<int64_t>(hn::Lanes(df));
    const int8_t* qs = reinterpret_cast<const int8_t*>(p + 2);
    VF s0 = hn::Zero(df), s1 = s0;
    for (int64_t c = 0; c < 16; c += L) {
      s0 = hn::MulAdd(hn::ConvertTo(df, hn::PromoteTo(di, hn::LoadU(di8, qs + c))),
                      hn::LoadU(df, xb + c), s0);
      s1 = hn::MulAdd(hn::ConvertTo(df, hn::PromoteTo(di, hn::LoadU(di8, qs + 16 + c))),
                      hn::LoadU(df, xb + 16 + c), s1);
    }
    return hn::Add(s0, s1);
  }
};

// ---- AVX-512 Q4_0 decode, 4 blocks (128 weights) per step, K a multiple of 128 ----------------
// The 4 blocks' 16-byte nibble runs are assembled into one 64-byte vector by a load and three
// 128-bit inserts from memory (load + ALU ports, not the shuffle port), then decoded as the
// int4g32 kernel does (kernels/cpu/matmul_quant.cc): dword lane i holds bytes 4i .. 4i+3 of
// block i / 4; shifting right by 4m puts one nibble per lane in the low bits, which vpermps uses
// as the index into the table of q - 8. Vector m, lane i is element 32 (i / 4) + 4 (i % 4) +
// m / 2 + 16 (m % 2) of the 128: x is permuted to that order once per call (PermuteXQ4_0), and
// lanes 4k .. 4k+3 are scaled by d of block k. Per 128 weights and row: 8 lookups + 1 scale
// permute on the shuffle port, as int4g32, instead of 4 zero-extends + 8 lookups.
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
constexpr bool kHaveQ4_0Quad = true;

// x [K] into xp [K] in the order above.
void PermuteXQ4_0(const float* x, int64_t K, float* xp) {
  for (int64_t b = 0; b < K; b += 128) {
    for (int64_t m = 0; m < 8; ++m) {
      for (int64_t i = 0; i < 16; ++i) {
        xp[b + 16 * m + i] = x[b + 32 * (i / 4) + 4 * (i % 4) + m / 2 + 16 * (m % 2)];
      }
    }
  }
}

template <int kR>
HWY_INLINE void DecodeTileQ4_0Quad(const GgufShape& q, const uint8_t* HWY_RESTRICT w,
                                   const float* HWY_RESTRICT xp, float* HWY_RESTRICT y) {
  const __m512 table = matmul_detail::Int4Table();
  const __m512i quad = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
  const int64_t rb = q.row_bytes;
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  HWY_ALIGN float ds[kR][kScaleChunk];
  for (int64_t b0 = 0; b0 < q.blocks; b0 += kScaleChunk) {
    const int64_t nb = std::min(kScaleChunk, q.blocks - b0);  // a multiple of 4
    BlockScales<kR>(w, rb, 18, b0, nb, ds);
    for (int64_t j = 0; j < nb; j += 4) {
      const int64_t b = b0 + j;
      const matmul_detail::X128 x = matmul_detail::LoadX128(xp + 32 * b);
#define G4_Q4_0_QUAD(r)                                                                            \
  if constexpr (kR > r) {                                                                          \
    const uint8_t* p = w + r * rb + 18 * b;                                                        \
    hwy::Prefetch(p + kR * rb);                                                                    \
    hwy::Prefetch(p + kR * rb + 64);                                                               \
    __m512i v = _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2)));  \
    v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 20)), 1);       \
    v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 38)), 2);       \
    v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 56)), 3);       \
    const __m512 d = matmul_detail::Int4LaneDots(v, x, table);                                     \
    const __m512 sc = _mm512_permutexvar_ps(quad, _mm512_broadcast_f32x4(_mm_load_ps(ds[r] + j))); \
    a##r = _mm512_fmadd_ps(d, sc, a##r);                                                           \
  }
      G4_Q4_0_QUAD(0) G4_Q4_0_QUAD(1) G4_Q4_0_QUAD(2) G4_Q4_0_QUAD(3)
#undef G4_Q4_0_QUAD
    }
  }
  matmul_detail::StoreRowSums<kR>(a0, a1, a2, a3, y);
}
#else
constexpr bool kHaveQ4_0Quad = false;
#endif

// Whether the 4-block Q4_0 decode applies (x must then be permuted by PermuteXQ4_0).
[[maybe_unused]] bool UseQ4_0Quad(const GgufShape& q) {
  return kHaveQ4_0Quad && q.kind == QuantKind::kQ4_0 && q.K % 128 == 0;
}

// x: as permuted by PermuteXQ4_0 when UseQ4_0Quad(q), else natural order.
void DecodeRows(const GgufShape& q, const float* x, int64_t begin, int64_t end, float* y) {
  using matmul_detail::ForEachRowTile;
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
  if (UseQ4_0Quad(q)) {
    ForEachRowTile(begin, end, [&](auto rows, int64_t n) HWY_ATTR {
      DecodeTileQ4_0Quad<decltype(rows)::value>(q, q.data + n * q.row_bytes, x, y + n);
    });
    return;
  }
#endif
  // The scaled tiles of Q4_0 or Q8_0 (dot: Q4_0Dot or Q8_0Dot).
  const auto scaled = [&](auto dot) HWY_ATTR {
    ForEachRowTile(begin, end, [&](auto rows, int64_t n) HWY_ATTR {
      DecodeTileScaled<decltype(rows)::value, decltype(dot)>(q, q.data + n * q.row_bytes, x, y + n);
    });
  };
  if (q.kind == QuantKind::kQ4_0) {
    scaled(Q4_0Dot());
  } else if (q.kind == QuantKind::kQ8_0) {
    scaled(Q8_0Dot());
  } else {
    DecodeRowsGeneric(q, x, begin, end, y);
  }
}

}  // namespace

// w: GGUF blocks [N, K] (core/tensor.h); x: [T, K] f32; y: [T, N] f32.
void GgufMatMulImpl(ThreadPool& pool, const TensorView& w, const float* x, int64_t T, float* y) {
  const int64_t N = w.dim(0), K = w.dim(1);
  if (T <= 0 || N <= 0) return;
  const BlockFormat f = GgufBlockFormat(w.quant.kind);
  if (f.elems == 0 || K <= 0 || K % f.elems != 0) {  // callers validate; never read out of bounds
    std::memset(y, 0, static_cast<size_t>(T * N) * sizeof(float));
    return;
  }
  const GgufShape q{w.quant.kind, static_cast<const uint8_t*>(w.data), w.quant.row_bytes, K, N,
                    K / f.elems};
  if (T == 1) {
    const int64_t grain = matmul_detail::WorkGrain(K, 4);
    const float* xd = x;
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
    thread_local std::vector<float> xp_buf;  // x in kernel order, shared read-only by the workers
    if (UseQ4_0Quad(q)) {
      xp_buf.resize(static_cast<size_t>(K));
      PermuteXQ4_0(x, K, xp_buf.data());
      xd = xp_buf.data();
    }
#endif
    pool.ParallelFor(N, grain, [&](int64_t begin, int64_t end) { DecodeRows(q, xd, begin, end, y); });
    return;
  }
  matmul_detail::ParallelPanels(pool, x, T, K, N, y,
                                [&](int64_t n0, int64_t nr, float* panel) HWY_ATTR {
                                  for (int64_t r = 0; r < nr; ++r) {
                                    StoreSink s{panel + r * K};
                                    VisitRow(q.kind, q.data + (n0 + r) * q.row_bytes, q.blocks, s);
                                  }
                                });
}

}  // namespace HWY_NAMESPACE
}  // namespace g4::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace g4::cpu {

G4_CPU_EXPORT(GgufMatMul,
              (ThreadPool& pool, const TensorView& w, const float* x, int64_t T, float* y),
              (pool, w, x, T, y))

}  // namespace g4::cpu
#endif  // HWY_ONCE
