// CPU MatMul (y = x @ w^T), Highway SIMD with runtime dispatch; must match g4::ref::MatMul
// (src/kernels/ref/matmul.cc) to f32-accumulation accuracy. Weights stay in their file dtype
// (F32/BF16/F16) and are widened to f32 in registers inside the dot product, never copied to a
// temporary f32 tensor: decode (T = 1) reads every weight byte once and is bound by memory
// bandwidth, so the kernel's job is to stream the weights at full speed. Rows N are split across
// the pool's threads; for T > 1 each loaded weight vector is reused for 2 or 4 tokens.

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/cpu/kernels.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/matmul.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/cpu/util-inl.h"

HWY_BEFORE_NAMESPACE();
namespace g4::cpu {
namespace HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// A tile of kR weight rows x kT tokens: y[t0 + t, n0 + r] = dot(w[n0 + r], x[t0 + t]).
// w: [N, K] (row n0 is at `w`), x: [T, K] (token t0 is at `x`), y: [T, N] (y[t0, n0] at `y`).
// Accumulators are named variables, not an array, so the code also builds for sizeless SVE
// vectors; those outside the tile are dead code. Loads of rows/tokens outside the tile are
// folded away at compile time (the conditions are constants).
template <int kR, int kT, typename TW>
HWY_INLINE void Tile(const TW* HWY_RESTRICT w, const float* HWY_RESTRICT x, int64_t K, int64_t N,
                     float* HWY_RESTRICT y) {
  static_assert(kR >= 1 && kR <= 4 && kT >= 1 && kT <= 4, "tile is at most 4 x 4");
  const DF df;
  const int64_t L = static_cast<int64_t>(hn::Lanes(df));
  // a<r><t>: row r, token t.
  VF a00 = hn::Zero(df), a01 = a00, a02 = a00, a03 = a00, a10 = a00, a11 = a00, a12 = a00,
     a13 = a00, a20 = a00, a21 = a00, a22 = a00, a23 = a00, a30 = a00, a31 = a00, a32 = a00,
     a33 = a00;
#define G4_FMA(r, t) \
  if constexpr (kR > r && kT > t) a##r##t = hn::MulAdd(w##r, x##t, a##r##t)
  int64_t k = 0;
  for (; k + L <= K; k += L) {
    const VF w0 = LoadWidened(df, w + k);
    const VF w1 = kR > 1 ? LoadWidened(df, w + K + k) : w0;
    const VF w2 = kR > 2 ? LoadWidened(df, w + 2 * K + k) : w0;
    const VF w3 = kR > 3 ? LoadWidened(df, w + 3 * K + k) : w0;
    const VF x0 = hn::LoadU(df, x + k);
    const VF x1 = kT > 1 ? hn::LoadU(df, x + K + k) : x0;
    const VF x2 = kT > 2 ? hn::LoadU(df, x + 2 * K + k) : x0;
    const VF x3 = kT > 3 ? hn::LoadU(df, x + 3 * K + k) : x0;
    G4_FMA(0, 0); G4_FMA(0, 1); G4_FMA(0, 2); G4_FMA(0, 3);
    G4_FMA(1, 0); G4_FMA(1, 1); G4_FMA(1, 2); G4_FMA(1, 3);
    G4_FMA(2, 0); G4_FMA(2, 1); G4_FMA(2, 2); G4_FMA(2, 3);
    G4_FMA(3, 0); G4_FMA(3, 1); G4_FMA(3, 2); G4_FMA(3, 3);
  }
#undef G4_FMA
  // Horizontal sums, then the K % L tail in scalar f32 (same widening as the SIMD body).
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
      for (int64_t kk = k; kk < K; ++kk) acc += WidenScalar(w[r * K + kk]) * x[t * K + kk];
      y[t * N + r] = acc;
    }
  }
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

template <typename TW>
void MatMulTyped(ThreadPool& pool, const TW* w, const float* x, int64_t T, int64_t K, int64_t N,
                 float* y) {
  // Below ~128K multiply-adds per chunk, waking a worker costs more than it saves.
  constexpr int64_t kMinWorkPerChunk = int64_t{1} << 17;
  const int64_t work_per_row = std::max<int64_t>(1, K * T);
  const int64_t grain = std::max<int64_t>(4, (kMinWorkPerChunk + work_per_row - 1) / work_per_row);
  pool.ParallelFor(N, grain, [&](int64_t begin, int64_t end) {
    MatMulRows(w, x, T, K, N, begin, end, y);
  });
}

}  // namespace

// w: [N, K] F32/BF16/F16; x: [T, K] f32; y: [T, N] f32.
void MatMulImpl(ThreadPool& pool, const TensorView& w, const float* x, int64_t T, float* y) {
  const int64_t N = w.dim(0), K = w.dim(1);
  if (T <= 0 || N <= 0) return;
  switch (w.dtype) {
    case DType::kF32:
      MatMulTyped(pool, static_cast<const float*>(w.data), x, T, K, N, y);
      break;
    case DType::kBF16:
      MatMulTyped(pool, static_cast<const hwy::bfloat16_t*>(w.data), x, T, K, N, y);
      break;
    case DType::kF16:
      MatMulTyped(pool, static_cast<const hwy::float16_t*>(w.data), x, T, K, N, y);
      break;
    default:  // not a float dtype: callers validate; match ref, which reads such weights as 0
      std::memset(y, 0, static_cast<size_t>(T * N) * sizeof(float));
      break;
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace g4::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace g4::cpu {

HWY_EXPORT(MatMulImpl);

void MatMul(ThreadPool& pool, const TensorView& w, const float* x, int64_t T, float* y) {
  HWY_DYNAMIC_DISPATCH(MatMulImpl)(pool, w, x, T, y);
}

}  // namespace g4::cpu
#endif  // HWY_ONCE
