// CPU MatMul (y = x @ w^T), Highway SIMD with runtime dispatch; must match g4::ref::MatMul
// (src/kernels/ref/matmul.cc) to f32-accumulation accuracy. Quantized weights go to
// matmul_quant.cc; the tiles shared by both live in matmul-inl.h. Weights stay in their file dtype
// (F32/BF16/F16) and are widened to f32 in registers inside the dot product, never copied to a
// temporary f32 tensor: decode (T = 1) reads every weight byte once and is bound by memory
// bandwidth, so the kernel's job is to stream the weights at full speed. Rows N are split across
// the pool's threads; for 1 < T < 8 each loaded weight vector is reused for 2 or 4 tokens, and
// from T = 8 (prefill chunks) blocks of rows are widened once into an f32 panel that a K-chunked
// GEMM runs over (matmul-inl.h GemmPanel).

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "kernels/cpu/kernels.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/matmul.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/cpu/util-inl.h"
#include "kernels/cpu/matmul-inl.h"

HWY_BEFORE_NAMESPACE();
namespace g4::cpu {
namespace HWY_NAMESPACE {
namespace {

using matmul_detail::MatMulRows;

// Row-block widths of T from which prefill widens blocks of weight rows into an f32 panel and
// runs the K-chunked GEMM (matmul-inl.h GemmPanel): below it (decode, small batches) the tiles
// widen in registers, each weight vector feeding T tokens.
constexpr int64_t kPanelMinTokens = 32;

// Rows [n0, n0 + rows) of w widened to f32 into panel [rows, K].
template <typename TW>
void WidenRows(const TW* HWY_RESTRICT w, int64_t K, int64_t n0, int64_t rows,
               float* HWY_RESTRICT panel) {
  const hn::ScalableTag<float> df;
  const int64_t L = static_cast<int64_t>(hn::Lanes(df));
  for (int64_t r = 0; r < rows; ++r) {
    const TW* src = w + (n0 + r) * K;
    float* dst = panel + r * K;
    int64_t k = 0;
    for (; k + L <= K; k += L) hn::StoreU(LoadWidened(df, src + k), df, dst + k);
    for (; k < K; ++k) dst[k] = WidenScalar(src[k]);
  }
}

template <typename TW>
void MatMulTyped(ThreadPool& pool, const TW* w, const float* x, int64_t T, int64_t K, int64_t N,
                 float* y) {
  if (T < kPanelMinTokens) {
    pool.ParallelFor(N, matmul_detail::WorkGrain(K * T, 4),
                     [&](int64_t begin, int64_t end) { MatMulRows(w, x, T, K, N, begin, end, y); });
    return;
  }
  const int64_t rows = matmul_detail::PanelRows(K);
  const int64_t panels = (N + rows - 1) / rows;
  pool.ParallelFor(panels, 1, [&](int64_t begin, int64_t end) {
    thread_local std::vector<float> panel_buf;
    for (int64_t p = begin; p < end; ++p) {
      const int64_t n0 = p * rows, nr = std::min(rows, N - n0);
      const float* panel;
      if constexpr (std::is_same_v<TW, float>) {
        panel = w + n0 * K;  // already f32: no copy
      } else {
        panel_buf.resize(static_cast<size_t>(rows * K));
        WidenRows(w, K, n0, nr, panel_buf.data());
        panel = panel_buf.data();
      }
      matmul_detail::GemmPanel(panel, nr, x, T, K, N, y + n0);
    }
  });
}

}  // namespace

// w: [N, K] F32/BF16/F16; x: [T, K] f32; y: [T, N] f32.
void MatMulImpl(ThreadPool& pool, const TensorView& w, const float* x, int64_t T, float* y) {
  const int64_t N = w.dim(0), K = w.dim(1);
  if (T <= 0 || N <= 0) return;
  ForFloatDType(w.dtype, w.data, y, T * N,
                [&](const auto* wt) HWY_ATTR { MatMulTyped(pool, wt, x, T, K, N, y); });
}

}  // namespace HWY_NAMESPACE
}  // namespace g4::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace g4::cpu {

HWY_EXPORT(MatMulImpl);

void MatMul(ThreadPool& pool, const TensorView& w, const float* x, int64_t T, float* y) {
  if (IsGgufBlock(w.quant.kind)) {  // GGUF blocks: matmul_gguf.cc
    GgufMatMul(pool, w, x, T, y);
    return;
  }
  if (w.quantized()) {  // int4 / int8 groups: matmul_quant.cc
    QuantMatMul(pool, w, x, T, y);
    return;
  }
  HWY_DYNAMIC_DISPATCH(MatMulImpl)(pool, w, x, T, y);
}

}  // namespace g4::cpu
#endif  // HWY_ONCE
