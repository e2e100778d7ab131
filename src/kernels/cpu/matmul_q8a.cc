// CPU MatMulQ8a (ops/matmul_q8a.h): decode matvecs of Q4_0 / Q5_0 / Q8_0 GGUF blocks against
// int8 activations, with integer dot products. x is quantized once per call (QuantizeQ8Blocks)
// and laid out in the order the kernel reads it; workers share it read-only. Every weight value
// is u - offset with u unsigned (Q8DotOffset: Q4_0 nibbles - 8, Q5_0 5-bit values - 16, Q8_0
// q = (q + 128) - 128), so a block's dot product is sum u * xq - offset * sum xq, the second term
// precomputed per block of x. Three paths, chosen per call from the live CPU (and the Highway
// target a test pins, so every path is tested on one machine):
//  * vnni512 (AVX-512 F/BW/VL + VNNI): vpdpbusd multiplies 64 unsigned by 64 signed bytes and
//    adds groups of 4 into 16 int32 lanes, starting from -offset * sum(xq) in one lane per block.
//    Q8_0 and Q5_0 take two blocks per step, Q4_0 four; x is laid out in the order the step
//    unpacks the weights (StepSource). The int32 lanes are converted once and scaled by dw * dx
//    of their block.
//  * avx2: one block per step; vpmaddubsw + vpmaddwd instead of vpdpbusd (Q8_0 through the sign
//    trick, |w| * sign(w) xq, so that no pair of products saturates int16).
//  * scalar: anywhere else (and the tails of the vnni512 path: blocks past the last full step).

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/dtype.h"
#include "core/q8_blocks.h"
#include "hwy/targets.h"
#include "kernels/cpu/kernels.h"
#include "ops/matmul_q8a.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define G4_Q8A_X86 1
// GCC 12 reports its own _mm512_undefined_* placeholders (the upper halves a cast leaves
// unspecified, then overwritten by an insert) as uninitialized.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define G4_TARGET_VNNI \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,f16c,fma")))
#define G4_TARGET_AVX2 __attribute__((target("avx2,fma,f16c")))
#else
#define G4_Q8A_X86 0
#endif

namespace g4::cpu {
namespace {

enum class Path { kScalar, kAvx2, kVnni512 };

Path ChoosePath() {
#if G4_Q8A_X86
  // The best Highway target allowed now (lower bits are better): a test's pinned target
  // restricts this the same way it restricts the Highway kernels.
  const int64_t bits = hwy::SupportedTargets() & HWY_TARGETS;
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
  int64_t row_bytes, K, N, blocks, block_bytes;
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
};

float Half(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return F16ToF32(h);
}

// y[n] for rows [begin, end), blocks [b0, blocks) (the tail after a SIMD path's steps) added to
// y when b0 > 0.
void ScalarRows(const Shape& s, const QuantX& x, int64_t b0, int64_t begin, int64_t end,
                float* y) {
  for (int64_t n = begin; n < end; ++n) {
    const uint8_t* row = s.data + n * s.row_bytes;
    float acc = 0.0f;
    for (int64_t b = b0; b < s.blocks; ++b) {
      const uint8_t* p = row + b * s.block_bytes;
      acc += Half(p) * x.dx[static_cast<size_t>(b)] *
             static_cast<float>(Q8BlockDot(s.kind, p, x.xq.data() + b * kQ8Block));
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
constexpr int kTileRows = 1;

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
    for (int64_t i = 0; i < bytes; ++i) {
      int64_t k, j;
      StepSource(s.kind, i, &k, &j);
      const int64_t from = (t * S + k) * kQ8Block + j;
      x.xs[static_cast<size_t>(t * bytes + i)] = x.xq[static_cast<size_t>(from)];
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

// The unsigned values of one step of kKind blocks at p as bytes in StepSource order, dotted
// with the step's x (xs) into dot; dw: the blocks' scales (ds: the row's, from the step's first
// block) on the lanes of their blocks.
template <QuantKind kKind>
G4_TARGET_VNNI inline void StepVnni(const uint8_t* p, const int8_t* xs, const float* ds,
                                    __m512i& dot, __m512& dw) {
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  if constexpr (kKind == QuantKind::kQ4_0) {  // 4 blocks: low nibbles, then high nibbles
    const __m128i q0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2));
    __m512i v = _mm512_castsi128_si512(q0);
    v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 20)), 1);
    v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 38)), 2);
    v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 56)), 3);
    const __m512i lo = _mm512_and_si512(v, low4);
    const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
    dot = _mm512_dpbusd_epi32(dot, lo, _mm512_loadu_si512(xs));
    dot = _mm512_dpbusd_epi32(dot, hi, _mm512_loadu_si512(xs + 64));
    const __m512i quad = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    dw = _mm512_permutexvar_ps(quad, _mm512_broadcast_f32x4(_mm_loadu_ps(ds)));
    return;
  }
  __m512i u;  // two blocks
  if constexpr (kKind == QuantKind::kQ8_0) {  // q + 128, natural order
    const __m256i q0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2));
    const __m256i q1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 36));
    u = _mm512_xor_si512(_mm512_inserti64x4(_mm512_castsi256_si512(q0), q1, 1),
                         _mm512_set1_epi8(static_cast<char>(0x80)));
  } else {  // Q5_0: nibbles as 128-bit lanes (lo b, lo b+1, hi b, hi b+1), + 16 per qh bit
    const __m256i q = _mm256_inserti128_si256(
        _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 6))),
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 28)), 1);
    const __m256i m = _mm256_set1_epi8(0x0f);
    u = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_and_si256(q, m)),
                           _mm256_and_si256(_mm256_srli_epi16(q, 4), m), 1);
    uint32_t qh0, qh1;
    std::memcpy(&qh0, p + 2, 4);
    std::memcpy(&qh1, p + 24, 4);
    const uint64_t bits = (qh0 & 0xffffu) | (uint64_t{qh1} & 0xffffu) << 16 |
                          uint64_t{qh0 >> 16} << 32 | uint64_t{qh1 >> 16} << 48;
    u = _mm512_mask_add_epi8(u, static_cast<__mmask64>(bits), u, _mm512_set1_epi8(16));
  }
  dot = _mm512_dpbusd_epi32(dot, u, _mm512_loadu_si512(xs));
  // Broadcasts from memory are loads; a blend is not a shuffle.
  const __mmask16 second = kKind == QuantKind::kQ8_0 ? 0xFF00 : 0xF0F0;
  dw = _mm512_mask_mov_ps(_mm512_set1_ps(ds[0]), second, _mm512_set1_ps(ds[1]));
}

// y[r] for kR rows (row_bytes apart) at w: the sum over the whole-step blocks (the scalar tail
// adds the rest). Each row's stream is prefetched kPrefetchRows * kR rows ahead.
template <QuantKind kKind, int kR>
G4_TARGET_VNNI void TileVnni(const Shape& s, const QuantX& x, const uint8_t* w, float* y) {
  constexpr int64_t S = kKind == QuantKind::kQ4_0 ? 4 : 2;
  constexpr int64_t bb = kKind == QuantKind::kQ4_0 ? 18 : kKind == QuantKind::kQ5_0 ? 22 : 34;
  constexpr int64_t xs_step = 32 * S;
  const int64_t whole = s.blocks / S * S, rb = s.row_bytes;
  __m512 acc[kR];
  for (int r = 0; r < kR; ++r) acc[r] = _mm512_setzero_ps();
  alignas(64) float ds[kR][kScaleChunk];
  const int8_t* xs = x.xs.data();
  const int32_t* corr = x.corr.data();
  const float* dxl = x.dxl.data();
  for (int64_t c0 = 0; c0 < whole; c0 += kScaleChunk) {
    const int64_t nb = std::min(kScaleChunk, whole - c0);  // a multiple of S
    for (int r = 0; r < kR; ++r) GatherScales(w + r * rb, bb, c0, nb, ds[r]);
    for (int64_t j = 0; j < nb; j += S, xs += xs_step, corr += 16, dxl += 16) {
      const uint8_t* p = w + (c0 + j) * bb;
      const __m512i start = _mm512_loadu_si512(corr);
      const __m512 dx = _mm512_loadu_ps(dxl);
      for (int r = 0; r < kR; ++r) {
        const char* ahead = reinterpret_cast<const char*>(p + r * rb + kPrefetchRows * kR * rb);
        _mm_prefetch(ahead, _MM_HINT_T0);
        _mm_prefetch(ahead + 64, _MM_HINT_T0);
        __m512i dot = start;
        __m512 dw;
        StepVnni<kKind>(p + r * rb, xs, ds[r] + j, dot, dw);
        acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(dw, dx), acc[r]);
      }
    }
  }
  for (int r = 0; r < kR; ++r) y[r] = _mm512_reduce_add_ps(acc[r]);
}

template <QuantKind kKind>
G4_TARGET_VNNI void RowsVnniOf(const Shape& s, const QuantX& x, int64_t begin, int64_t end,
                               float* y) {
  int64_t n = begin;
  for (; n + kTileRows <= end; n += kTileRows) {
    TileVnni<kKind, kTileRows>(s, x, s.data + n * s.row_bytes, y + n);
  }
  for (; n < end; ++n) TileVnni<kKind, 1>(s, x, s.data + n * s.row_bytes, y + n);
}

G4_TARGET_VNNI void RowsVnni(const Shape& s, const QuantX& x, int64_t begin, int64_t end,
                             float* y) {
  switch (s.kind) {
    case QuantKind::kQ4_0: RowsVnniOf<QuantKind::kQ4_0>(s, x, begin, end, y); break;
    case QuantKind::kQ5_0: RowsVnniOf<QuantKind::kQ5_0>(s, x, begin, end, y); break;
    default: RowsVnniOf<QuantKind::kQ8_0>(s, x, begin, end, y); break;
  }
  const int64_t done = s.blocks / StepBlocks(s.kind) * StepBlocks(s.kind);
  if (done < s.blocks) ScalarRows(s, x, done, begin, end, y);
}

// ---- avx2 ---------------------------------------------------------------------------------

// The 8 int32 partial sums of sum u * xq over one block (the caller subtracts offset * sum xq).
G4_TARGET_AVX2 inline __m256i BlockDotAvx2(QuantKind kind, const uint8_t* p, const int8_t* xb) {
  const __m256i ones = _mm256_set1_epi16(1);
  const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb));
  if (kind == QuantKind::kQ8_0) {  // the signed q directly: |q| * sign(q) xq, offset 0 here
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2));
    const __m256i pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(xv, w));
    return _mm256_madd_epi16(pairs, ones);
  }
  const bool q5 = kind == QuantKind::kQ5_0;
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + (q5 ? 6 : 2)));
  const __m128i m = _mm_set1_epi8(0x0f);
  __m256i u = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), m), _mm_and_si128(v, m));
  if (q5) {  // byte i |= 16 where bit i of qh: byte i of a broadcast holds qh's byte i / 8
    uint32_t qh;
    std::memcpy(&qh, p + 2, 4);
    const __m256i which = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,  //
                                           2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
    const __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(qh)), which);
    const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(bytes, bit), bit);
    u = _mm256_or_si256(u, _mm256_and_si256(set, _mm256_set1_epi8(16)));
  }
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, xv), ones);
}

G4_TARGET_AVX2 void RowAvx2(const Shape& s, const QuantX& x, const uint8_t* w, float* y) {
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < s.blocks; ++b) {
    const uint8_t* p = w + b * s.block_bytes;
    if (b % 2 == 0) {
      _mm_prefetch(reinterpret_cast<const char*>(p + kPrefetchRows * s.row_bytes), _MM_HINT_T0);
    }
    // -offset * sum(xq) in one lane makes the lane sum the signed dot product (Q8_0: signed
    // already).
    const int32_t offset = s.kind == QuantKind::kQ8_0 ? 0 : Q8DotOffset(s.kind);
    const __m256i start =
        _mm256_setr_epi32(-offset * x.sx[static_cast<size_t>(b)], 0, 0, 0, 0, 0, 0, 0);
    uint16_t h;
    std::memcpy(&h, p, 2);
    const __m256i dot =
        _mm256_add_epi32(BlockDotAvx2(s.kind, p, x.xq.data() + b * kQ8Block), start);
    const float scale = _cvtsh_ss(h) * x.dx[static_cast<size_t>(b)];
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_set1_ps(scale), acc);
  }
  __m128 v = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
  v = _mm_add_ps(v, _mm_movehl_ps(v, v));
  v = _mm_add_ss(v, _mm_movehdup_ps(v));
  *y = _mm_cvtss_f32(v);
}

G4_TARGET_AVX2 void RowsAvx2(const Shape& s, const QuantX& x, int64_t begin, int64_t end,
                             float* y) {
  for (int64_t n = begin; n < end; ++n) RowAvx2(s, x, s.data + n * s.row_bytes, y + n);
}
#endif  // G4_Q8A_X86

}  // namespace

const char* MatMulQ8aKernel() { return PathName(ChoosePath()); }

void MatMulQ8a(ThreadPool& pool, const TensorView& w, const float* x, int64_t T, float* y) {
  if (!UsesQ8Activations(w, T)) return MatMul(pool, w, x, T, y);
  const int64_t K = w.dim(1), blocks = K / kQ8Block;
  const Shape s{w.quant.kind, static_cast<const uint8_t*>(w.data), w.quant.row_bytes, K, w.dim(0),
                blocks, GgufBlockFormat(w.quant.kind).bytes};
  thread_local QuantX caller_qx;
  // Named through a reference: a thread_local named in the lambdas would be each worker's own.
  QuantX& qx = caller_qx;
  qx.xq.resize(static_cast<size_t>(K));
  qx.dx.resize(static_cast<size_t>(blocks));
  qx.sx.resize(static_cast<size_t>(blocks));
  QuantizeQ8Blocks(x, K, qx.xq.data(), qx.dx.data(), qx.sx.data());
  const Path path = ChoosePath();
  const int64_t grain = std::max<int64_t>(4, ((int64_t{1} << 17) + K - 1) / K);
#if G4_Q8A_X86
  if (path == Path::kVnni512) {
    LayoutVnni(s, qx);
    pool.ParallelFor(s.N, grain, [&](int64_t b, int64_t e) { RowsVnni(s, qx, b, e, y); });
    return;
  }
  if (path == Path::kAvx2) {
    pool.ParallelFor(s.N, grain, [&](int64_t b, int64_t e) { RowsAvx2(s, qx, b, e, y); });
    return;
  }
#endif
  pool.ParallelFor(s.N, grain, [&](int64_t b, int64_t e) { ScalarRows(s, qx, 0, b, e, y); });
}

}  // namespace g4::cpu
