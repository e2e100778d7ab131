// Per-target GEMM building blocks shared by the CPU MatMul kernels (matmul.cc for float
// weights, matmul_quant.cc for quantized ones, which dequantizes blocks of rows into f32 and runs
// them through the same tiles): a kR x kT tile of dot products with the weights widened in
// registers, the row-range driver that reuses each loaded weight vector for several tokens, and
// the panel driver of the prefill GEMM.
// Must match g4::ref::MatMul (src/kernels/ref/matmul.cc) to f32-accumulation accuracy.
// This is a Highway "-inl.h", re-included once per target by foreach_target.h (hence the toggle
// guard). Include it after "hwy/highway.h" and "kernels/cpu/util-inl.h".

#if defined(G4_KERNELS_CPU_MATMUL_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef G4_KERNELS_CPU_MATMUL_INL_H_
#undef G4_KERNELS_CPU_MATMUL_INL_H_
#else
#define G4_KERNELS_CPU_MATMUL_INL_H_
#endif

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "kernels/cpu/util-inl.h"

HWY_BEFORE_NAMESPACE();
namespace g4::cpu {
namespace HWY_NAMESPACE {
namespace matmul_detail {

// A tile of kR weight rows x kT tokens over `len` elements of K:
//   y[t * ldy + r] (+)= dot(w[r * ldw .. + len], x[t * ldx .. + len]).
// With kAcc the tile adds to y (a K-chunk after the first); otherwise it stores.
// Accumulators are named variables, not an array, so the code also builds for sizeless SVE
// vectors; those outside the tile are dead code. Loads of rows/tokens outside the tile are
// folded away at compile time (the conditions are constants).
template <int kR, int kT, bool kAcc, typename TW>
HWY_INLINE void TileStrided(const TW* HWY_RESTRICT w, int64_t ldw, const float* HWY_RESTRICT x,
                            int64_t ldx, int64_t len, float* HWY_RESTRICT y, int64_t ldy) {
  static_assert(kR >= 1 && kR <= 4 && kT >= 1 && kT <= 4, "tile is at most 4 x 4");
  const DF df;
  const int64_t L = static_cast<int64_t>(hn::Lanes(df));
  // a<r><t>: row r, token t.
  VF a00 = hn::Zero(df), a01 = a00, a02 = a00, a03 = a00, a10 = a00, a11 = a00, a12 = a00,
     a13 = a00, a20 = a00, a21 = a00, a22 = a00, a23 = a00, a30 = a00, a31 = a00, a32 = a00,
     a33 = a00;
#define G4_FMA(r, t) \
  if constexpr (kR > r && kT > t) a##r##t = hn::MulAdd(w##r, x##t, a##r##t)
  // Decode (kT == 1) prefetches the same offsets of the next kR rows (the next tile: rows are
  // consecutive memory) once per cache line: checkpoint mmaps use 4 KiB pages, where the
  // hardware prefetchers stop at every page boundary (see matmul_quant.cc).
  constexpr int64_t kLineElems = 64 / static_cast<int64_t>(sizeof(TW));
  int64_t k = 0;
  for (; k + L <= len; k += L) {
    if constexpr (kT == 1) {
      if (k % kLineElems < L) {
        hwy::Prefetch(w + kR * ldw + k);
        if constexpr (kR > 1) hwy::Prefetch(w + (kR + 1) * ldw + k);
        if constexpr (kR > 2) hwy::Prefetch(w + (kR + 2) * ldw + k);
        if constexpr (kR > 3) hwy::Prefetch(w + (kR + 3) * ldw + k);
      }
    }
    const VF w0 = LoadWidened(df, w + k);
    const VF w1 = kR > 1 ? LoadWidened(df, w + ldw + k) : w0;
    const VF w2 = kR > 2 ? LoadWidened(df, w + 2 * ldw + k) : w0;
    const VF w3 = kR > 3 ? LoadWidened(df, w + 3 * ldw + k) : w0;
    const VF x0 = hn::LoadU(df, x + k);
    const VF x1 = kT > 1 ? hn::LoadU(df, x + ldx + k) : x0;
    const VF x2 = kT > 2 ? hn::LoadU(df, x + 2 * ldx + k) : x0;
    const VF x3 = kT > 3 ? hn::LoadU(df, x + 3 * ldx + k) : x0;
    G4_FMA(0, 0); G4_FMA(0, 1); G4_FMA(0, 2); G4_FMA(0, 3);
    G4_FMA(1, 0); G4_FMA(1, 1); G4_FMA(1, 2); G4_FMA(1, 3);
    G4_FMA(2, 0); G4_FMA(2, 1); G4_FMA(2, 2); G4_FMA(2, 3);
    G4_FMA(3, 0); G4_FMA(3, 1); G4_FMA(3, 2); G4_FMA(3, 3);
  }
#undef G4_FMA
  // Horizontal sums, then the len % L tail in scalar f32 (same widening as the SIMD body).
  float s[4][4] = {};
#define G4_SUM(r, t) \
  if constexpr (kR > r && kT > t) s[r][t] = ReduceSum(df, a##r##t)
  G4_SUM(0, 0); G4_SUM(0, 1); G4_SUM(0, 2); G4_SUM(0, 3);
  G4_SUM(1, 0); G4_SUM(1, 1); G4_SUM(1, 2); G4_SUM(1, 3);
  G4_SUM(2, 0); G4_SUM(2, 1); G4_SUM(2, 2); G4_SUM(2, 3);
  G4_SUM(3, 0); G4_SUM(3, 1); G4_SUM(3, 2); G4_SUM(3, 3);
#undef G4_SUM
  for (int r = 0; r < kR; ++r) {
    for (int t = 0; t < kT; ++t) {
      float acc = s[r][t];
      for (int64_t kk = k; kk < len; ++kk) acc += WidenScalar(w[r * ldw + kk]) * x[t * ldx + kk];
      if constexpr (kAcc) {
        y[t * ldy + r] += acc;
      } else {
        y[t * ldy + r] = acc;
      }
    }
  }
}

// The whole-K tile: y[t0 + t, n0 + r] = dot(w[n0 + r], x[t0 + t]).
// w: [N, K] (row n0 is at `w`), x: [T, K] (token t0 is at `x`), y: [T, N] (y[t0, n0] at `y`).
template <int kR, int kT, typename TW>
HWY_INLINE void Tile(const TW* HWY_RESTRICT w, const float* HWY_RESTRICT x, int64_t K, int64_t N,
                     float* HWY_RESTRICT y) {
  TileStrided<kR, kT, false>(w, K, x, K, K, y, N);
}

// Prefill (T > 1) tiles: 4 rows x kPrefillTokens tokens, so each weight vector loaded (and
// widened) feeds kPrefillTokens FMAs and each x vector feeds 4. 4 x 4 needs 16 accumulators +
// 8 loaded vectors: right for 32-register ISAs (AVX-512, NEON, SVE), but it spills on the
// 16-register x86 targets (SSE4, AVX2), which get 4 x 2. On AVX-512 4 x 4 measured ~1.5x the
// throughput of 2 x 4 at E2B shapes with T = 8 (x is re-read from L2 per row block: larger row
// blocks mean fewer re-reads).
#if HWY_ARCH_X86 && HWY_TARGET > HWY_AVX3
constexpr int kPrefillRows = 4;
constexpr int kPrefillTokens = 2;
#else
constexpr int kPrefillRows = 4;
constexpr int kPrefillTokens = 4;
#endif

// Tokens [t0, t0 + nt) against rows [n, n + kR), nt in 1..kPrefillTokens.
template <int kR, typename TW>
HWY_INLINE void TileTokens(const TW* w, const float* x, int64_t K, int64_t N, int64_t n, int64_t t0,
                           int64_t nt, float* y) {
  const TW* wr = w + n * K;
  const float* xt = x + t0 * K;
  float* yt = y + t0 * N + n;
  // Only tiles up to kPrefillTokens wide are instantiated.
  if (nt == 1) {
    Tile<kR, 1>(wr, xt, K, N, yt);
  } else if (nt == 2 || kPrefillTokens == 2) {
    Tile<kR, 2>(wr, xt, K, N, yt);
  } else if (nt == 3) {
    if constexpr (kPrefillTokens >= 3) Tile<kR, 3>(wr, xt, K, N, yt);
  } else {
    if constexpr (kPrefillTokens >= 4) Tile<kR, 4>(wr, xt, K, N, yt);
  }
}

// Rows [n_begin, n_end) of y for all T tokens. Rows are the outer loop so each weight row is
// fetched from memory once and re-read from L1 for every block of tokens; the last
// < kPrefillRows rows of the range go one at a time.
template <typename TW>
void MatMulRows(const TW* HWY_RESTRICT w, const float* HWY_RESTRICT x, int64_t T, int64_t K,
                int64_t N, int64_t n_begin, int64_t n_end, float* HWY_RESTRICT y) {
  int64_t n = n_begin;
  if (T == 1) {
    // Decode: 4 independent weight streams per step keep enough loads in flight.
    for (; n + 4 <= n_end; n += 4) Tile<4, 1>(w + n * K, x, K, N, y + n);
    for (; n < n_end; ++n) Tile<1, 1>(w + n * K, x, K, N, y + n);
    return;
  }
  for (; n + kPrefillRows <= n_end; n += kPrefillRows) {
    for (int64_t t = 0; t < T; t += kPrefillTokens) {
      TileTokens<kPrefillRows>(w, x, K, N, n, t, std::min<int64_t>(kPrefillTokens, T - t), y);
    }
  }
  for (; n < n_end; ++n) {
    for (int64_t t = 0; t < T; t += kPrefillTokens) {
      TileTokens<1>(w, x, K, N, n, t, std::min<int64_t>(kPrefillTokens, T - t), y);
    }
  }
}

// Tokens [t0, t0 + nt) (nt in 1..kPrefillTokens) against kR rows over one K-chunk.
template <int kR, bool kAcc>
HWY_INLINE void PanelTileTokens(const float* w, int64_t K, const float* x, int64_t len, int64_t N,
                                int64_t nt, float* y) {
  if (nt == 1) {
    TileStrided<kR, 1, kAcc>(w, K, x, K, len, y, N);
  } else if (nt == 2 || kPrefillTokens == 2) {
    TileStrided<kR, 2, kAcc>(w, K, x, K, len, y, N);
  } else if (nt == 3) {
    if constexpr (kPrefillTokens >= 3) TileStrided<kR, 3, kAcc>(w, K, x, K, len, y, N);
  } else {
    if constexpr (kPrefillTokens >= 4) TileStrided<kR, 4, kAcc>(w, K, x, K, len, y, N);
  }
}

// Elements of K per pass of the panel GEMM. Every pass ends in horizontal sums of the tile's
// accumulators (~8 ops each), so chunks must stay long: at 512 they cost a quarter of the FMA
// time; at 2048, E2B's K = 1536 rows run whole and 6144-wide rows in 3 passes.
constexpr int64_t kPanelKChunk = 2048;

// y[t, r] for r < rows, t < T (y at column n0 of [T, N]) from an f32 panel [rows, K] of weight
// rows: the prefill GEMM. K-chunks, then blocks of tokens, are the outer loops, so the x block
// stays in L2 while each 4-row group (L1/L2) streams every token tile of it past its rows.
HWY_INLINE void GemmPanel(const float* HWY_RESTRICT panel, int64_t rows,
                          const float* HWY_RESTRICT x, int64_t T, int64_t K, int64_t N,
                          float* HWY_RESTRICT y) {
  // Token blocks of ~512 KiB of x per K-chunk stay in L2 while every row group passes over them.
  const int64_t block = std::max<int64_t>(
      kPrefillTokens, (int64_t{1} << 17) / std::min(K, kPanelKChunk) / kPrefillTokens * kPrefillTokens);
  for (int64_t kc = 0; kc < K; kc += kPanelKChunk) {
    const int64_t len = std::min(kPanelKChunk, K - kc);
    const bool acc = kc > 0;
    for (int64_t t0 = 0; t0 < T; t0 += block) {
      const int64_t t1 = std::min(T, t0 + block);
      int64_t r = 0;
      for (; r + kPrefillRows <= rows; r += kPrefillRows) {
        for (int64_t t = t0; t < t1; t += kPrefillTokens) {
          const int64_t nt = std::min<int64_t>(kPrefillTokens, t1 - t);
          const float* w = panel + r * K + kc;
          const float* xt = x + t * K + kc;
          float* yt = y + t * N + r;
          if (acc) {
            PanelTileTokens<kPrefillRows, true>(w, K, xt, len, N, nt, yt);
          } else {
            PanelTileTokens<kPrefillRows, false>(w, K, xt, len, N, nt, yt);
          }
        }
      }
      for (; r < rows; ++r) {
        for (int64_t t = t0; t < t1; t += kPrefillTokens) {
          const int64_t nt = std::min<int64_t>(kPrefillTokens, t1 - t);
          const float* w = panel + r * K + kc;
          const float* xt = x + t * K + kc;
          float* yt = y + t * N + r;
          if (acc) {
            PanelTileTokens<1, true>(w, K, xt, len, N, nt, yt);
          } else {
            PanelTileTokens<1, false>(w, K, xt, len, N, nt, yt);
          }
        }
      }
    }
  }
}

// The grain (items per chunk, at least min_items) of a ParallelFor over items (rows, panels) of
// work_per_item multiply-adds each: below ~128K multiply-adds per chunk, waking a worker costs
// more than it saves.
HWY_INLINE int64_t WorkGrain(int64_t work_per_item, int64_t min_items) {
  const int64_t work = std::max<int64_t>(1, work_per_item);
  return std::max<int64_t>(min_items, ((int64_t{1} << 17) + work - 1) / work);
}

// Rows per f32 panel of the prefill GEMM: ~256 KiB (L2-resident while the K-chunks pass over
// it), a multiple of the 4-row tile.
HWY_INLINE int64_t PanelRows(int64_t K) {
  const int64_t rows = (int64_t{1} << 14) / std::max<int64_t>(1, K);
  return std::clamp<int64_t>(rows / 4 * 4, 4, 64);
}

// y[r] = the sum of the lanes of a<r> for the kR <= 4 rows of a decode tile.
template <int kR, class D>
HWY_INLINE void StoreRowSums(D df, hn::Vec<D> a0, hn::Vec<D> a1, hn::Vec<D> a2, hn::Vec<D> a3,
                             float* HWY_RESTRICT y) {
  y[0] = ReduceSum(df, a0);
  if constexpr (kR > 1) y[1] = ReduceSum(df, a1);
  if constexpr (kR > 2) y[2] = ReduceSum(df, a2);
  if constexpr (kR > 3) y[3] = ReduceSum(df, a3);
}

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
// ---- AVX-512 int4 blocks of 128 weights (matmul_quant.cc DecodeTileBlock128 for int4 groups of
// 32, matmul_gguf.cc DecodeTileQ4_0Quad for Q4_0). Each of the 16 dword lanes of one 64-byte
// vector holds 8 nibbles; shifting the vector right by 4m puts nibble m of every lane in the low
// 4 bits, which vpermps uses as the index into a 16-entry table of the signed values q - 8.

// The table: entry q holds q - 8 as f32.
HWY_INLINE __m512 Int4Table() {
  return _mm512_setr_ps(-8.0f, -7.0f, -6.0f, -5.0f, -4.0f, -3.0f, -2.0f, -1.0f, 0.0f, 1.0f, 2.0f,
                        3.0f, 4.0f, 5.0f, 6.0f, 7.0f);
}

// The 8 vectors of x that nibbles 0 .. 7 of the lanes multiply: x.m[m] = xb[16 m .. 16 m + 16).
struct X128 {
  __m512 m[8];
};
HWY_INLINE X128 LoadX128(const float* HWY_RESTRICT xb) {
  X128 x;
  x.m[0] = _mm512_loadu_ps(xb), x.m[1] = _mm512_loadu_ps(xb + 16);
  x.m[2] = _mm512_loadu_ps(xb + 32), x.m[3] = _mm512_loadu_ps(xb + 48);
  x.m[4] = _mm512_loadu_ps(xb + 64), x.m[5] = _mm512_loadu_ps(xb + 80);
  x.m[6] = _mm512_loadu_ps(xb + 96), x.m[7] = _mm512_loadu_ps(xb + 112);
  return x;
}

// Lane i: sum over m of (nibble m of lane i of v - 8) * x.m[m][i] (8 lookups, 8 multiply-adds).
HWY_INLINE __m512 Int4LaneDots(__m512i v, const X128& x, __m512 table) {
  __m512 d = _mm512_mul_ps(_mm512_permutexvar_ps(v, table), x.m[0]);
  d = _mm512_fmadd_ps(_mm512_permutexvar_ps(_mm512_srli_epi32(v, 4), table), x.m[1], d);
  d = _mm512_fmadd_ps(_mm512_permutexvar_ps(_mm512_srli_epi32(v, 8), table), x.m[2], d);
  d = _mm512_fmadd_ps(_mm512_permutexvar_ps(_mm512_srli_epi32(v, 12), table), x.m[3], d);
  d = _mm512_fmadd_ps(_mm512_permutexvar_ps(_mm512_srli_epi32(v, 16), table), x.m[4], d);
  d = _mm512_fmadd_ps(_mm512_permutexvar_ps(_mm512_srli_epi32(v, 20), table), x.m[5], d);
  d = _mm512_fmadd_ps(_mm512_permutexvar_ps(_mm512_srli_epi32(v, 24), table), x.m[6], d);
  return _mm512_fmadd_ps(_mm512_permutexvar_ps(_mm512_srli_epi32(v, 28), table), x.m[7], d);
}

// StoreRowSums for __m512 accumulators.
template <int kR>
HWY_INLINE void StoreRowSums(__m512 a0, __m512 a1, __m512 a2, __m512 a3, float* HWY_RESTRICT y) {
  y[0] = _mm512_reduce_add_ps(a0);
  if constexpr (kR > 1) y[1] = _mm512_reduce_add_ps(a1);
  if constexpr (kR > 2) y[2] = _mm512_reduce_add_ps(a2);
  if constexpr (kR > 3) y[3] = _mm512_reduce_add_ps(a3);
}
#endif  // AVX-512

// tile(rows, n) over the row tiles of [begin, end): 4 rows at a time, then one by one; rows is
// std::integral_constant<int, 4> or <int, 1> (decltype(rows)::value: the tile height).
template <class Tile>
HWY_INLINE void ForEachRowTile(int64_t begin, int64_t end, const Tile& tile) {
  int64_t n = begin;
  for (; n + 4 <= end; n += 4) tile(std::integral_constant<int, 4>(), n);
  for (; n < end; ++n) tile(std::integral_constant<int, 1>(), n);
}

// Prefill of block-quantized weights [N, K] (matmul_quant.cc, matmul_gguf.cc): each thread
// dequantizes panels of PanelRows(K) rows, fill(n0, nr, panel) writing rows [n0, n0 + nr) as f32
// into panel [nr, K] in the order of x, and runs GemmPanel over each, so every weight byte is
// unpacked once per call. x: [T, K] f32; y: [T, N] f32.
template <class Fill>
void ParallelPanels(ThreadPool& pool, const float* x, int64_t T, int64_t K, int64_t N, float* y,
                    const Fill& fill) {
  const int64_t rows = PanelRows(K);
  const int64_t panels = (N + rows - 1) / rows;
  pool.ParallelFor(panels, WorkGrain(rows * K * T, 1), [&](int64_t begin, int64_t end) {
    thread_local std::vector<float> panel;
    panel.resize(static_cast<size_t>(rows * K));
    for (int64_t p = begin; p < end; ++p) {
      const int64_t n0 = p * rows, nr = std::min(rows, N - n0);
      fill(n0, nr, panel.data());
      GemmPanel(panel.data(), nr, x, T, K, N, y + n0);
    }
  });
}

}  // namespace matmul_detail
}  // namespace HWY_NAMESPACE
}  // namespace g4::cpu
HWY_AFTER_NAMESPACE();

#endif  // G4_KERNELS_CPU_MATMUL_INL_H_
