// CPU MatMulQ8a (ops/matmul_q8a.h): decode matvecs of Q4_0 / Q5_0 / Q8_0 / Q4_K / Q6_K GGUF
// blocks against int8 activations, with integer dot products. x is quantized once per call
// (QuantizeQ8Blocks) and laid out in the order the kernel reads it; workers share it read-only.
// Every weight value is an unsigned small integer u under scales, minus an offset (Q8DotOffset:
// Q4_0 nibbles - 8, Q5_0 5-bit values - 16, Q6_K 6-bit values - 32, Q8_0 q = (q + 128) - 128;
// Q4_K nibbles carry a min term instead, dmin * m * sum(xq)), so a dot product is sum u * xq
// minus offset * sum xq, the second term precomputed per block of x. Three paths, chosen per call
// from the live CPU (and the Highway target a test pins, so every path is tested on one machine):
//  * vnni512 (AVX-512 F/BW/VL + VNNI): vpdpbusd multiplies 64 unsigned by 64 signed bytes and
//    adds groups of 4 into 16 int32 lanes, starting from -offset * sum(xq) in one lane per
//    block (or group). Q8_0 and Q5_0 take two blocks per step, Q4_0 four, Q4_K and Q6_K one
//    256-value block; x is laid out in the order a step unpacks the weights. The int32 lanes are
//    converted once and scaled by the scales of their block, sub-block or group.
//  * avx2: 32 values per step; vpmaddubsw + vpmaddwd instead of vpdpbusd (Q8_0 through the sign
//    trick, |w| * sign(w) xq, so that no pair of products saturates int16; u <= 63 elsewhere).
//  * scalar (Q8Dot): anywhere else, and the tails of the vnni512 path (blocks past its last full
//    step).
// On vnni512, Q4_0 / Q5_0 / Q8_0 / Q6_K weights packed at load (PackQ8aWeight: 16-row panels,
// matmul_q8a_packed.h) take the packed kernels for every T; T > 1 on other weights builds
// per-call panels (matmul_q8a_gemm.h). On avx2, Q4_0 / Q5_0 / Q8_0 weights are packed the same
// way and read by an AVX2 panel kernel, and T > 1 on Q4_K / Q6_K builds per-call panels. W4A16's
// int4 groups of 32 are packed as Q4_0 panels where their scales allow (matmul_q8a_int4.h).

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "core/dtype.h"
#include "core/q8_blocks.h"
#include "hwy/targets.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/matmul_q8a_gemm.h"
#include "kernels/cpu/matmul_q8a_int4.h"
#include "kernels/cpu/matmul_q8a_packed.h"
#include "kernels/cpu/q8_blocks.h"
#include "kernels/cpu/q8a_x86.h"
#include "ops/matmul_q8a.h"

namespace g4::cpu {
namespace {

enum class Path { kScalar, kAvx2, kVnni512 };

Path ChoosePath() {
#if G4_Q8A_X86
  // The best Highway target allowed now (lower bits are better): a test's pinned target
  // restricts this the same way it restricts the Highway kernels.
  const int64_t bits = SupportedTargetBits();
  const int64_t best = bits & -bits;
  if (best != 0 && best <= HWY_AVX3 && __builtin_cpu_supports("avx512vnni")) return Path::kVnni512;
  if (best != 0 && best <= HWY_AVX2) return Path::kAvx2;
#endif
  return Path::kScalar;
}

const char* PathName(Path p) {
  switch (p) {
    case Path::kVnni512: return "vnni512";
    case Path::kAvx2: return "avx2";
    default: return "scalar";
  }
}

struct Shape {
  QuantKind kind;  // HasQ8Dot
  const uint8_t* data;
  int64_t row_bytes, K, N;
  int64_t blocks, block_bytes, elems;  // weight blocks per row, their bytes and values
};

// x quantized: natural order (xq, dx, sx) and, for the vnni512 path, per step of S blocks
// (StepBlocks): the bytes in step order (xs: 64 per step, natural; Q4_0 128: the low-nibble then
// the high-nibble partners), the int32 start (corr: -offset * sx) and the per-lane dx.
struct QuantX {
  std::vector<int8_t> xq;
  std::vector<float> dx;
  std::vector<int32_t> sx;
  std::vector<int8_t> xs;
  std::vector<int32_t> corr;  // [steps, 16]
  std::vector<float> dxl;     // [steps, 16]
  std::vector<int32_t> sx16;  // Q6_K: the sums of xq over its groups of 16
};

// y[n] for rows [begin, end), blocks [b0, blocks) (the tail after a SIMD path's steps) added to
// y when b0 > 0.
void ScalarRows(const Shape& s, const QuantX& x, int64_t b0, int64_t begin, int64_t end,
                float* y) {
  for (int64_t n = begin; n < end; ++n) {
    const uint8_t* row = s.data + n * s.row_bytes;
    float acc = 0.0f;
    const int64_t per = s.elems / kQ8Block;
    for (int64_t b = b0; b < s.blocks; ++b) {
      acc += static_cast<float>(Q8Dot(s.kind, row + b * s.block_bytes, x.xq.data() + b * s.elems,
                                      x.dx.data() + b * per, x.sx.data() + b * per));
    }
    y[n] = b0 > 0 ? y[n] + acc : acc;
  }
}

#if G4_Q8A_X86
// Rows are read one after another, each from its start to its end, and prefetched this many rows
// ahead: one forward stream per thread, which the hardware prefetchers follow. A 4-row tile (x
// loaded once per 4 rows, as the exact kernels do) interleaves 4 streams within each page and
// ran the Gemma 3 270M head [262144, 640] at 13-16 ms against 7-9 ms for this (2 threads,
// benchmarks/kernels/matmul_gguf_bench.cc); x is int8 and L1-resident, so reloading it is cheap.
constexpr int64_t kPrefetchRows = 4;

// ---- vnni512 ------------------------------------------------------------------------------

constexpr int64_t kScaleChunk = 64;  // blocks whose scales are converted in one pass

int64_t StepBlocks(QuantKind kind) { return kind == QuantKind::kQ4_0 ? 4 : 2; }

// Byte i of a step of the vnni512 path holds element j of block k of the step (the order in
// which the kernel unpacks the weights): Q8_0 two natural blocks; Q5_0 the 16-byte halves
// (block 0 low, block 1 low, block 0 high, block 1 high); Q4_0 the low halves of its four
// blocks, then the high halves.
void StepSource(QuantKind kind, int64_t i, int64_t* k, int64_t* j) {
  if (kind == QuantKind::kQ8_0) {
    *k = i / 32, *j = i % 32;
  } else if (kind == QuantKind::kQ5_0) {
    *k = i / 16 % 2, *j = i / 32 * 16 + i % 16;
  } else {
    *k = i % 64 / 16, *j = i / 64 * 16 + i % 16;
  }
}

// The step-order layout of x for the vnni512 path. Int32 lane l sums bytes 4l .. 4l + 3, so it
// belongs to the block of byte 4l; the first lane of each block starts at -offset * sum(xq).
void LayoutVnni(const Shape& s, QuantX& x) {
  const int64_t S = StepBlocks(s.kind), steps = s.blocks / S, bytes = 32 * S;
  x.xs.assign(static_cast<size_t>(steps * bytes), 0);
  x.corr.assign(static_cast<size_t>(steps * 16), 0);
  x.dxl.assign(static_cast<size_t>(steps * 16), 0.0f);
  for (int64_t t = 0; t < steps; ++t) {
    for (int64_t i = 0; i < bytes; i += 16) {  // StepSource keeps runs of 16 bytes together
      int64_t k, j;
      StepSource(s.kind, i, &k, &j);
      const int64_t from = (t * S + k) * kQ8Block + j;
      std::memcpy(&x.xs[static_cast<size_t>(t * bytes + i)], &x.xq[static_cast<size_t>(from)], 16);
    }
    bool started[4] = {};
    for (int64_t l = 0; l < 16; ++l) {
      int64_t k, j;
      StepSource(s.kind, 4 * l, &k, &j);
      const size_t b = static_cast<size_t>(t * S + k);
      x.dxl[static_cast<size_t>(t * 16 + l)] = x.dx[b];
      if (!started[k]) x.corr[static_cast<size_t>(t * 16 + l)] = -Q8DotOffset(s.kind) * x.sx[b];
      started[k] = true;
    }
  }
}

// ds[j] = the f16 d of block b0 + j of the row at w, j < nb <= kScaleChunk: one masked gather
// of the dwords at the block starts per 16, truncated to their low halves.
G4_TARGET_VNNI inline void GatherScales(const uint8_t* w, int64_t bytes, int64_t b0, int64_t nb,
                                        float* ds) {
  const __m512i offsets = _mm512_mullo_epi32(
      _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
      _mm512_set1_epi32(static_cast<int>(bytes)));
  const uint8_t* p = w + b0 * bytes;
  for (int64_t j = 0; j < nb; j += 16) {
    const __mmask16 m =
        nb - j >= 16 ? __mmask16{0xFFFF} : static_cast<__mmask16>((1u << (nb - j)) - 1);
    const __m512i g =
        _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m, offsets, p + j * bytes, 1);
    _mm512_store_ps(ds + j, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(g)));
  }
}

// The unsigned values of one step of kKind blocks at p as bytes in StepSource order (u0; Q4_0:
// its low nibbles in u0, high in u1) and the blocks' scales (ds: the row's, from the step's first
// block) on the lanes of their blocks (dw).
template <QuantKind kKind>
G4_TARGET_VNNI inline void UnpackVnni(const uint8_t* p, const float* ds, __m512i& u0, __m512i& u1,
                                      __m512& dw) {
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  if constexpr (kKind == QuantKind::kQ4_0) {  // 4 blocks: low nibbles, then high nibbles
    const __m128i q0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2));
    __m512i v = _mm512_castsi128_si512(q0);
    v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 20)), 1);
    v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 38)), 2);
    v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 56)), 3);
    u0 = _mm512_and_si512(v, low4);
    u1 = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
    const __m512i quad = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    dw = _mm512_permutexvar_ps(quad, _mm512_broadcast_f32x4(_mm_loadu_ps(ds)));
    return;
  }
  // two blocks
  if constexpr (kKind == QuantKind::kQ8_0) {  // q + 128, natural order
    const __m256i q0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2));
    const __m256i q1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 36));
    u0 = _mm512_xor_si512(_mm512_inserti64x4(_mm512_castsi256_si512(q0), q1, 1),
                          _mm512_set1_epi8(static_cast<char>(0x80)));
  } else {  // Q5_0: nibbles as 128-bit lanes (lo b, lo b+1, hi b, hi b+1), + 16 per qh bit
    const __m256i q = _mm256_inserti128_si256(
        _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 6))),
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 28)), 1);
    const __m256i m = _mm256_set1_epi8(0x0f);
    u0 = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_and_si256(q, m)),
                            _mm256_and_si256(_mm256_srli_epi16(q, 4), m), 1);
    uint32_t qh0, qh1;
    std::memcpy(&qh0, p + 2, 4);
    std::memcpy(&qh1, p + 24, 4);
    const uint64_t bits = (qh0 & 0xffffu) | (uint64_t{qh1} & 0xffffu) << 16 |
                          uint64_t{qh0 >> 16} << 32 | uint64_t{qh1 >> 16} << 48;
    u0 = _mm512_mask_add_epi8(u0, static_cast<__mmask64>(bits), u0, _mm512_set1_epi8(16));
  }
  u1 = u0;  // unused
  // Broadcasts from memory are loads; a blend is not a shuffle.
  const __mmask16 second = kKind == QuantKind::kQ8_0 ? 0xFF00 : 0xF0F0;
  dw = _mm512_mask_mov_ps(_mm512_set1_ps(ds[0]), second, _mm512_set1_ps(ds[1]));
}

// dot + the step's unpacked values (UnpackVnni) times its x (xs, in step order).
template <QuantKind kKind>
G4_TARGET_VNNI inline __m512i DotVnni(__m512i dot, __m512i u0, __m512i u1, const int8_t* xs) {
  dot = _mm512_dpbusd_epi32(dot, u0, _mm512_loadu_si512(xs));
  if constexpr (kKind == QuantKind::kQ4_0) {
    dot = _mm512_dpbusd_epi32(dot, u1, _mm512_loadu_si512(xs + 64));
  }
  return dot;
}

// y = the sum over the whole-step blocks of the row at w (the scalar tail adds the rest).
template <QuantKind kKind>
G4_TARGET_VNNI void RowVnni(const Shape& s, const QuantX& x, const uint8_t* w, float* y) {
  constexpr int64_t S = kKind == QuantKind::kQ4_0 ? 4 : 2;
  constexpr int64_t bb = kKind == QuantKind::kQ4_0 ? 18 : kKind == QuantKind::kQ5_0 ? 22 : 34;
  constexpr int64_t xs_step = 32 * S;
  const int64_t whole = s.blocks / S * S;
  __m512 acc = _mm512_setzero_ps();
  alignas(64) float ds[kScaleChunk];
  const int8_t* xs = x.xs.data();
  const int32_t* corr = x.corr.data();
  const float* dxl = x.dxl.data();
  for (int64_t c0 = 0; c0 < whole; c0 += kScaleChunk) {
    const int64_t nb = std::min(kScaleChunk, whole - c0);  // a multiple of S
    GatherScales(w, bb, c0, nb, ds);
    for (int64_t j = 0; j < nb; j += S, xs += xs_step, corr += 16, dxl += 16) {
      const uint8_t* p = w + (c0 + j) * bb;
      const char* ahead = reinterpret_cast<const char*>(p + kPrefetchRows * s.row_bytes);
      _mm_prefetch(ahead, _MM_HINT_T0);
      _mm_prefetch(ahead + 64, _MM_HINT_T0);
      __m512i u0, u1;
      __m512 dw;
      UnpackVnni<kKind>(p, ds + j, u0, u1, dw);
      const __m512i dot = DotVnni<kKind>(_mm512_loadu_si512(corr), u0, u1, xs);
      acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(dw, _mm512_loadu_ps(dxl)), acc);
    }
  }
  *y = _mm512_reduce_add_ps(acc);
}

// ---- Q4_K (vnni512): one 256-value block per step. x per block: its 8 sub-blocks of 32 in the
// order the nibbles come out of two 64-byte loads of qs (sub-blocks 0|2, 1|3, 4|6, 5|7: low
// nibbles of the first load, high, low of the second, high), and 16 floats: dx of each
// sub-block, then dx * sum(xq).
void LayoutQ4K(const Shape& s, QuantX& x) {
  static constexpr int kOrder[8] = {0, 2, 1, 3, 4, 6, 5, 7};
  x.xs.resize(static_cast<size_t>(s.blocks * 256));
  x.dxl.resize(static_cast<size_t>(s.blocks * 16));
  for (int64_t b = 0; b < s.blocks; ++b) {
    for (int i = 0; i < 8; ++i) {
      std::memcpy(&x.xs[static_cast<size_t>(b * 256 + 32 * i)],
                  &x.xq[static_cast<size_t>(b * 256 + 32 * kOrder[i])], 32);
      const size_t xb = static_cast<size_t>(8 * b + i);
      x.dxl[static_cast<size_t>(16 * b + i)] = x.dx[xb];
      x.dxl[static_cast<size_t>(16 * b + 8 + i)] = x.dx[xb] * static_cast<float>(x.sx[xb]);
    }
  }
}

// The 8 6-bit scales (bytes 0-7) and mins (bytes 8-15) of a Q4_K block's 12 scale bytes
// (GgufScaleMinK4), four at a time in 32-bit words.
inline __m128i ScalesMinsQ4K(const uint8_t* scales) {
  uint32_t w0, w1, w2;
  std::memcpy(&w0, scales, 4);
  std::memcpy(&w1, scales + 4, 4);
  std::memcpy(&w2, scales + 8, 4);
  const uint32_t sc_lo = w0 & 0x3f3f3f3fu, m_lo = w1 & 0x3f3f3f3fu;
  const uint32_t sc_hi = (w2 & 0x0f0f0f0fu) | ((w0 >> 6) & 0x03030303u) << 4;
  const uint32_t m_hi = ((w2 >> 4) & 0x0f0f0f0fu) | ((w1 >> 6) & 0x03030303u) << 4;
  return _mm_set_epi64x(static_cast<int64_t>(uint64_t{m_hi} << 32 | m_lo),
                        static_cast<int64_t>(uint64_t{sc_hi} << 32 | sc_lo));
}

G4_TARGET_VNNI void RowQ4K(const Shape& s, const QuantX& x, const uint8_t* w, float* y) {
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  // Lane -> sub-block of each dpbusd result (see LayoutQ4K).
  const __m512i sb02 = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2);
  const __m512i sb13 = _mm512_add_epi32(sb02, _mm512_set1_epi32(1));
  const __m512i sb46 = _mm512_add_epi32(sb02, _mm512_set1_epi32(4));
  const __m512i sb57 = _mm512_add_epi32(sb02, _mm512_set1_epi32(5));
  __m512 acc = _mm512_setzero_ps(), mins = _mm512_setzero_ps();
  const int8_t* xs = x.xs.data();
  const float* dxl = x.dxl.data();
  for (int64_t b = 0; b < s.blocks; ++b, xs += 256, dxl += 16) {
    const uint8_t* p = w + b * 144;
    const char* ahead = reinterpret_cast<const char*>(p + kPrefetchRows * s.row_bytes);
    _mm_prefetch(ahead, _MM_HINT_T0);
    _mm_prefetch(ahead + 64, _MM_HINT_T0);
    _mm_prefetch(ahead + 128, _MM_HINT_T0);
    // Lanes 0-7: d * sc_i * dx_i; lanes 8-15: dmin * m_i * dx_i * sum_i.
    uint32_t dd;
    std::memcpy(&dd, p, 4);
    const __m512 d_dmin = _mm512_permutexvar_ps(
        _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1),
        _mm512_castps128_ps512(_mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(dd)))));
    const __m512 f = _mm512_mul_ps(
        _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(ScalesMinsQ4K(p + 4))), d_dmin),
        _mm512_loadu_ps(dxl));
    mins = _mm512_add_ps(mins, f);  // lanes 0-7 are dropped at the end
    const __m512i v0 = _mm512_loadu_si512(p + 16), v1 = _mm512_loadu_si512(p + 80);
    const __m512i zero = _mm512_setzero_si512();
    const __m512i a =
        _mm512_dpbusd_epi32(zero, _mm512_and_si512(v0, low4), _mm512_loadu_si512(xs));
    const __m512i c = _mm512_dpbusd_epi32(
        zero, _mm512_and_si512(_mm512_srli_epi16(v0, 4), low4), _mm512_loadu_si512(xs + 64));
    const __m512i e =
        _mm512_dpbusd_epi32(zero, _mm512_and_si512(v1, low4), _mm512_loadu_si512(xs + 128));
    const __m512i g = _mm512_dpbusd_epi32(
        zero, _mm512_and_si512(_mm512_srli_epi16(v1, 4), low4), _mm512_loadu_si512(xs + 192));
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(a), _mm512_permutexvar_ps(sb02, f), acc);
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(c), _mm512_permutexvar_ps(sb13, f), acc);
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(e), _mm512_permutexvar_ps(sb46, f), acc);
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(g), _mm512_permutexvar_ps(sb57, f), acc);
  }
  *y = _mm512_reduce_add_ps(acc) - _mm512_reduce_add_ps(_mm512_maskz_mov_ps(0xFF00, mins));
}

// ---- Q6_K (vnni512): one 256-value block per step, x in natural order; per block 64 int32
// starts (for each half h and each of its two 64-value products: lane 4k = -32 * the sum of xq
// over the product's group k) and the 16 groups' dx.
void LayoutQ6K(const Shape& s, QuantX& x) {
  x.corr.assign(static_cast<size_t>(s.blocks * 64), 0);
  x.dxl.resize(static_cast<size_t>(s.blocks * 16));
  for (int64_t b = 0; b < s.blocks; ++b) {
    for (int64_t g = 0; g < 16; ++g) {
      const int64_t h = g / 8, part = g % 8 / 4, k = g % 4;
      x.corr[static_cast<size_t>(64 * b + 32 * h + 16 * part + 4 * k)] =
          -32 * x.sx16[static_cast<size_t>(16 * b + g)];
      x.dxl[static_cast<size_t>(16 * b + g)] = x.dx[static_cast<size_t>(8 * b + g / 2)];
    }
  }
}

// Q6_K's ql nibbles and qh bit pairs as one half's 6-bit values: bytes 0-31 and 32-63 of ulo are
// values l and 32 + l, of uhi 64 + l and 96 + l (l < 32), as natural order within the half.
G4_TARGET_VNNI void RowQ6K(const Shape& s, const QuantX& x, const uint8_t* w, float* y) {
  const __m512i low4 = _mm512_set1_epi8(0x0f), top2 = _mm512_set1_epi8(0x30);
  // Per 16-bit word: qh bits 0-1 / 2-3 up to bits 4-5 for values l / 32 + l; bits 4-5 / 6-7
  // down for 64 + l / 96 + l.
  const __m512i up = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(2), 1);
  const __m512i down = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1);
  const __m512i g0 = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
  const __m512i groups[4] = {g0, _mm512_add_epi32(g0, _mm512_set1_epi32(4)),
                             _mm512_add_epi32(g0, _mm512_set1_epi32(8)),
                             _mm512_add_epi32(g0, _mm512_set1_epi32(12))};
  __m512 acc = _mm512_setzero_ps();
  for (int64_t b = 0; b < s.blocks; ++b) {
    const uint8_t* p = w + b * 210;
    const char* ahead = reinterpret_cast<const char*>(p + kPrefetchRows * s.row_bytes);
    for (int line = 0; line < 4; ++line) _mm_prefetch(ahead + 64 * line, _MM_HINT_T0);
    uint16_t hd;
    std::memcpy(&hd, p + 208, 2);
    // Lane g: d * sc_g * dx of group g.
    const __m512 sc = _mm512_cvtepi32_ps(
        _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 192))));
    const __m512 f = _mm512_mul_ps(_mm512_mul_ps(sc, _mm512_set1_ps(_cvtsh_ss(hd))),
                                   _mm512_loadu_ps(x.dxl.data() + 16 * b));
    const int8_t* xb = x.xq.data() + 256 * b;
    const int32_t* corr = x.corr.data() + 64 * b;
    for (int h = 0; h < 2; ++h) {
      const __m512i ql = _mm512_loadu_si512(p + 64 * h);
      const __m512i qh = _mm512_broadcast_i64x4(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 128 + 32 * h)));
      const __m512i ulo = _mm512_or_si512(_mm512_and_si512(ql, low4),
                                          _mm512_and_si512(_mm512_sllv_epi16(qh, up), top2));
      const __m512i uhi =
          _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), low4),
                          _mm512_and_si512(_mm512_srlv_epi16(qh, down), top2));
      const __m512i a = _mm512_dpbusd_epi32(_mm512_loadu_si512(corr + 32 * h), ulo,
                                            _mm512_loadu_si512(xb + 128 * h));
      const __m512i c = _mm512_dpbusd_epi32(_mm512_loadu_si512(corr + 32 * h + 16), uhi,
                                            _mm512_loadu_si512(xb + 128 * h + 64));
      acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(a), _mm512_permutexvar_ps(groups[2 * h], f), acc);
      acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(c), _mm512_permutexvar_ps(groups[2 * h + 1], f),
                            acc);
    }
  }
  *y = _mm512_reduce_add_ps(acc);
}

template <QuantKind kKind>
G4_TARGET_VNNI void RowsVnniOf(const Shape& s, const QuantX& x, int64_t begin, int64_t end,
                               float* y) {
  for (int64_t n = begin; n < end; ++n) RowVnni<kKind>(s, x, s.data + n * s.row_bytes, y + n);
}

G4_TARGET_VNNI void RowsVnni(const Shape& s, const QuantX& x, int64_t begin, int64_t end,
                             float* y) {
  switch (s.kind) {
    case QuantKind::kQ4_K:
      for (int64_t n = begin; n < end; ++n) RowQ4K(s, x, s.data + n * s.row_bytes, y + n);
      return;
    case QuantKind::kQ6_K:
      for (int64_t n = begin; n < end; ++n) RowQ6K(s, x, s.data + n * s.row_bytes, y + n);
      return;
    case QuantKind::kQ4_0: RowsVnniOf<QuantKind::kQ4_0>(s, x, begin, end, y); break;
    case QuantKind::kQ5_0: RowsVnniOf<QuantKind::kQ5_0>(s, x, begin, end, y); break;
    default: RowsVnniOf<QuantKind::kQ8_0>(s, x, begin, end, y); break;
  }
  const int64_t done = s.blocks / StepBlocks(s.kind) * StepBlocks(s.kind);
  if (done < s.blocks) ScalarRows(s, x, done, begin, end, y);
}

// ---- avx2 ---------------------------------------------------------------------------------

// The sum of the 8 lanes of v.
G4_TARGET_AVX2 inline float SumLanes(__m256 v) {
  __m128 h = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  h = _mm_add_ps(h, _mm_movehl_ps(h, h));
  return _mm_cvtss_f32(_mm_add_ss(h, _mm_movehdup_ps(h)));
}

// The 8 int32 partial sums of sum u * xq over one block of kKind (Q4_0 / Q5_0: u unsigned, the
// caller subtracts offset * sum xq; Q8_0: the signed q directly, |q| * sign(q) xq, so that no
// pair of products saturates int16).
template <QuantKind kKind>
G4_TARGET_AVX2 inline __m256i BlockDotAvx2(const uint8_t* p, __m256i xv) {
  const __m256i ones = _mm256_set1_epi16(1);
  if constexpr (kKind == QuantKind::kQ8_0) {
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2));
    const __m256i pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(xv, w));
    return _mm256_madd_epi16(pairs, ones);
  } else {
    constexpr bool kQ5 = kKind == QuantKind::kQ5_0;
    // The 16 bytes in both halves, the high half shifted by 4: the low nibbles, then the high.
    const __m256i v = _mm256_broadcastsi128_si256(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + (kQ5 ? 6 : 2))));
    __m256i u = _mm256_and_si256(_mm256_srlv_epi64(v, _mm256_setr_epi64x(0, 0, 4, 4)),
                                 _mm256_set1_epi8(0x0f));
    if constexpr (kQ5) {  // byte i |= 16 where bit i of qh
      uint32_t qh;
      std::memcpy(&qh, p + 2, 4);
      u = _mm256_or_si256(u, x86::SixteenWhereBitAvx2(qh));
    }
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, xv), ones);
  }
}

// kR rows at w (row_bytes apart) against x: each block of x is loaded once for the kR rows, whose
// accumulators are independent chains. -offset * sum(xq) in one lane makes the lane sum the
// signed dot product. Kind and offset are template constants: a per-block switch (and the call
// it took to find the offset) ran Q4_0 at 3.5 GB/s on 2 AVX2 cores, below the exact kernel.
template <QuantKind kKind, int kR>
G4_TARGET_AVX2 void RowsTileAvx2(const Shape& s, const QuantX& x, const uint8_t* w, float* y) {
  // Q8_0's q are read signed here (BlockDotAvx2): no offset.
  constexpr int32_t kOffset = kKind == QuantKind::kQ8_0 ? 0 : Q8DotOffset(kKind);
  const int64_t rb = s.row_bytes;
  __m256 acc[kR];
  for (int r = 0; r < kR; ++r) acc[r] = _mm256_setzero_ps();
  for (int64_t b = 0; b < s.blocks; ++b) {
    const uint8_t* p = w + b * s.block_bytes;
    if (b % 2 == 0) {
      for (int r = 0; r < kR; ++r) {
        _mm_prefetch(reinterpret_cast<const char*>(p + (r + kPrefetchRows) * rb), _MM_HINT_T0);
      }
    }
    const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.xq.data() + b * 32));
    const __m256i start = _mm256_setr_epi32(-kOffset * x.sx[static_cast<size_t>(b)], 0, 0, 0, 0,
                                            0, 0, 0);
    const float dx = x.dx[static_cast<size_t>(b)];
    for (int r = 0; r < kR; ++r) {
      const uint8_t* pr = p + r * rb;
      uint16_t h;
      std::memcpy(&h, pr, 2);
      __m256i dot = BlockDotAvx2<kKind>(pr, xv);
      if constexpr (kOffset != 0) dot = _mm256_add_epi32(dot, start);
      acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_set1_ps(_cvtsh_ss(h) * dx), acc[r]);
    }
  }
  for (int r = 0; r < kR; ++r) y[r] = SumLanes(acc[r]);
}

template <QuantKind kKind>
G4_TARGET_AVX2 void RowsAvx2Blocks(const Shape& s, const QuantX& x, int64_t begin, int64_t end,
                                   float* y) {
  int64_t n = begin;
  for (; n + 4 <= end; n += 4) RowsTileAvx2<kKind, 4>(s, x, s.data + n * s.row_bytes, y + n);
  for (; n + 2 <= end; n += 2) RowsTileAvx2<kKind, 2>(s, x, s.data + n * s.row_bytes, y + n);
  if (n < end) RowsTileAvx2<kKind, 1>(s, x, s.data + n * s.row_bytes, y + n);
}

// Q4_K, one sub-block of 32 per step; the mins' term in f32 scalars.
G4_TARGET_AVX2 void RowAvx2Q4K(const Shape& s, const QuantX& x, const uint8_t* w, float* y) {
  const __m256i ones = _mm256_set1_epi16(1), low4 = _mm256_set1_epi8(0x0f);
  __m256 acc = _mm256_setzero_ps();
  float mins = 0.0f;
  for (int64_t b = 0; b < s.blocks; ++b) {
    const uint8_t* p = w + b * 144;
    _mm_prefetch(reinterpret_cast<const char*>(p + kPrefetchRows * s.row_bytes), _MM_HINT_T0);
    uint16_t hd, hm;
    std::memcpy(&hd, p, 2);
    std::memcpy(&hm, p + 2, 2);
    const float d = _cvtsh_ss(hd), dmin = _cvtsh_ss(hm);
    alignas(16) uint8_t sm[16];  // scales 0-7, mins 8-15
    _mm_store_si128(reinterpret_cast<__m128i*>(sm), ScalesMinsQ4K(p + 4));
    for (int c = 0; c < 4; ++c) {
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 16 + 32 * c));
      for (int h = 0; h < 2; ++h) {
        const int i = 2 * c + h;
        const size_t xb = static_cast<size_t>(8 * b + i);
        const __m256i u = h == 0 ? _mm256_and_si256(q, low4)
                                 : _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
        const __m256i xv =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.xq.data() + 32 * xb));
        const __m256i dot = _mm256_madd_epi16(_mm256_maddubs_epi16(u, xv), ones);
        const __m256 scale = _mm256_set1_ps(d * sm[i] * x.dx[xb]);
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), scale, acc);
        mins += dmin * sm[8 + i] * x.dx[xb] * static_cast<float>(x.sx[xb]);
      }
    }
  }
  *y = SumLanes(acc) - mins;
}

// Q6_K, 32 values (two groups of 16) per step.
G4_TARGET_AVX2 void RowAvx2Q6K(const Shape& s, const QuantX& x, const uint8_t* w, float* y) {
  const __m256i ones = _mm256_set1_epi16(1), low4 = _mm256_set1_epi8(0x0f);
  const __m256i three = _mm256_set1_epi8(3);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < s.blocks; ++b) {
    const uint8_t* p = w + b * 210;
    _mm_prefetch(reinterpret_cast<const char*>(p + kPrefetchRows * s.row_bytes), _MM_HINT_T0);
    uint16_t hd;
    std::memcpy(&hd, p + 208, 2);
    const float d = _cvtsh_ss(hd);
    const int8_t* sc = reinterpret_cast<const int8_t*>(p + 192);
    for (int h = 0; h < 2; ++h) {
      const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 128 + 32 * h));
      for (int part = 0; part < 4; ++part) {  // values 128 h + 32 part + l
        const __m256i ql =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 64 * h + 32 * (part % 2)));
        const __m256i nib = part < 2 ? _mm256_and_si256(ql, low4)
                                     : _mm256_and_si256(_mm256_srli_epi16(ql, 4), low4);
        const __m256i hb =
            _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * part)), three);
        const __m256i u = _mm256_or_si256(nib, _mm256_slli_epi16(hb, 4));
        const int64_t v0 = 128 * h + 32 * part, g = v0 / 16;
        const size_t xg = static_cast<size_t>(16 * b + g);
        const __m256i xv =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.xq.data() + 256 * b + v0));
        const __m256i start =
            _mm256_setr_epi32(-32 * x.sx16[xg], 0, 0, 0, -32 * x.sx16[xg + 1], 0, 0, 0);
        const __m256i dot =
            _mm256_add_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(u, xv), ones), start);
        const float dxg = d * x.dx[static_cast<size_t>(8 * b + g / 2)];
        const __m256 scale =
            _mm256_set_m128(_mm_set1_ps(dxg * sc[g + 1]), _mm_set1_ps(dxg * sc[g]));
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), scale, acc);
      }
    }
  }
  *y = SumLanes(acc);
}

G4_TARGET_AVX2 void RowsAvx2(const Shape& s, const QuantX& x, int64_t begin, int64_t end,
                             float* y) {
  switch (s.kind) {
    case QuantKind::kQ4_0: return RowsAvx2Blocks<QuantKind::kQ4_0>(s, x, begin, end, y);
    case QuantKind::kQ5_0: return RowsAvx2Blocks<QuantKind::kQ5_0>(s, x, begin, end, y);
    case QuantKind::kQ8_0: return RowsAvx2Blocks<QuantKind::kQ8_0>(s, x, begin, end, y);
    default: break;
  }
  for (int64_t n = begin; n < end; ++n) {
    if (s.kind == QuantKind::kQ4_K) {
      RowAvx2Q4K(s, x, s.data + n * s.row_bytes, y + n);
    } else {
      RowAvx2Q6K(s, x, s.data + n * s.row_bytes, y + n);
    }
  }
}
#endif  // G4_Q8A_X86

// x quantized and laid out for `path` (QuantizeQ8Blocks, then the vnni512 step order).
void QuantizeRow(const Shape& s, Path path, const float* x, QuantX& qx) {
  const int64_t K = s.K, blocks = K / kQ8Block;
  qx.xq.resize(static_cast<size_t>(K));
  qx.dx.resize(static_cast<size_t>(blocks));
  qx.sx.resize(static_cast<size_t>(blocks));
  cpu::QuantizeQ8Blocks(x, K, qx.xq.data(), qx.dx.data(), qx.sx.data());
  if (s.kind == QuantKind::kQ6_K) {
    qx.sx16.resize(static_cast<size_t>(K / 16));
    cpu::SumsOf16(qx.xq.data(), K, qx.sx16.data());
  }
#if G4_Q8A_X86
  if (path != Path::kVnni512) return;
  if (s.kind == QuantKind::kQ4_K) {
    LayoutQ4K(s, qx);
  } else if (s.kind == QuantKind::kQ6_K) {
    LayoutQ6K(s, qx);
  } else {
    LayoutVnni(s, qx);
  }
#else
  (void)path;
#endif
}

// Rows [begin, end) of w against one row of x, with the row kernels of `path`.
void Rows(const Shape& s, Path path, const QuantX& qx, int64_t begin, int64_t end, float* y) {
#if G4_Q8A_X86
  if (path == Path::kVnni512) return RowsVnni(s, qx, begin, end, y);
  if (path == Path::kAvx2) return RowsAvx2(s, qx, begin, end, y);
#endif
  ScalarRows(s, qx, 0, begin, end, y);
}

// Rows [begin, end) of w against every row of x (xt: T of them): y: [T, N]. Rows are taken in
// groups whose weights stay in L2 while every row of x passes over them.
void RowsAllTokens(const Shape& s, Path path, const std::vector<QuantX>& xt, int64_t begin,
                   int64_t end, float* y) {
  const int64_t T = static_cast<int64_t>(xt.size());
  const int64_t group = std::max<int64_t>(1, (int64_t{96} << 10) / s.row_bytes);
  for (int64_t g0 = begin; g0 < end; g0 += group) {
    const int64_t g1 = std::min(end, g0 + group);
    for (int64_t t = 0; t < T; ++t) Rows(s, path, xt[static_cast<size_t>(t)], g0, g1, y + t * s.N);
  }
}

// Whether path has a kernel for the panels of kind (PacksQ8aPanels): vnni512 and AVX2.
bool PanelKernelFor(Path path, QuantKind kind) {
  // 256: a K every packed kind accepts
  return PacksQ8aPanels(kind, 256) && (path == Path::kVnni512 || path == Path::kAvx2);
}

// Int4 groups of 32, packed (UsesQ8Activations): their Q4_0 panels, or their rows where a test
// pinned a target below the panel kernels.
void MatMulQ8aInt4(ThreadPool& pool, const TensorView& w, const float* x, int64_t T, float* y) {
#if G4_Q8A_X86
  const Path path = ChoosePath();
  if (path == Path::kVnni512) return MatMulQ8aPacked(pool, Int4PanelsAsQ4_0(w), x, T, y);
  if (path == Path::kAvx2) return MatMulQ8aPackedAvx2(pool, Int4PanelsAsQ4_0(w), x, T, y);
#endif
  MatMulQ8aInt4Rows(pool, w, x, T, y);
}

}  // namespace

const char* MatMulQ8aKernel() { return PathName(ChoosePath()); }

PackedWeight PackQ8aWeight(ThreadPool& pool, const TensorView& w) {
  // An [E, N, K] expert stack is packed as its E * N rows, when each expert starts a panel.
  TensorView rows = w;
  if (w.shape.size() == 3) {
    if (w.dim(1) % kQ8aPanelRows != 0) return {};
    rows.shape = {w.dim(0) * w.dim(1), w.dim(2)};
  }
  const Path path = ChoosePath();
  if (IsInt4Group32(w)) {
    return path == Path::kScalar ? PackedWeight{} : PackQ8aInt4Panels(pool, rows);
  }
  if (!UsesQ8Activations(rows, 1) || !PanelKernelFor(path, w.quant.kind)) return {};
  return PackQ8aPanels(pool, rows);
}

void MatMulQ8a(ThreadPool& pool, const TensorView& w, const float* x, int64_t T, float* y) {
  if (!UsesQ8Activations(w, T)) return MatMul(pool, w, x, T, y);
  if (IsInt4Group32(w)) return MatMulQ8aInt4(pool, w, x, T, y);
  const int64_t K = w.dim(1);
  const BlockFormat f = GgufBlockFormat(w.quant.kind);
  const Shape s{w.quant.kind, static_cast<const uint8_t*>(w.data), w.quant.row_bytes, K, w.dim(0),
                K / f.elems, f.bytes, f.elems};
  const Path path = ChoosePath();
#if G4_Q8A_X86
  // Panels packed at load (PackQ8aWeight) serve decode and prefill alike; a test that pins a
  // narrower target than the one they were made for gets the per-row kernels below.
  if (path == Path::kVnni512 && w.quant.panels != nullptr) {
    return MatMulQ8aPacked(pool, w, x, T, y);
  }
  if (T > 1 && path == Path::kVnni512) return MatMulQ8aPanels(pool, w, x, T, y);
  if (path == Path::kAvx2 && w.quant.panels != nullptr && PanelKernelFor(path, w.quant.kind)) {
    return MatMulQ8aPackedAvx2(pool, w, x, T, y);
  }
  if (T > 1 && path == Path::kAvx2 &&
      (w.quant.kind == QuantKind::kQ4_K || w.quant.kind == QuantKind::kQ6_K)) {
    return MatMulQ8aPanelsAvx2(pool, w, x, T, y);
  }
#endif
  const int64_t grain = std::max<int64_t>(4, ((int64_t{1} << 17) + K - 1) / K);
  // Named through references: a thread_local named in the lambdas would be each worker's own.
  thread_local std::vector<QuantX> caller_xt;
  std::vector<QuantX>& xt = caller_xt;
  xt.resize(static_cast<size_t>(T));
  if (T == 1) {
    QuantizeRow(s, path, x, xt[0]);
    pool.ParallelFor(s.N, grain, [&](int64_t b, int64_t e) { Rows(s, path, xt[0], b, e, y); });
    return;
  }
  pool.ParallelFor(T, 1, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) QuantizeRow(s, path, x + t * K, xt[static_cast<size_t>(t)]);
  });
  pool.ParallelFor(s.N, grain, [&](int64_t b, int64_t e) { RowsAllTokens(s, path, xt, b, e, y); });
}

}  // namespace g4::cpu
