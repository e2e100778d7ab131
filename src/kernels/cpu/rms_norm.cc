// CPU RmsNorm, Highway SIMD with runtime dispatch; must match g4::ref::RmsNorm
// (src/kernels/ref/rms_norm.cc): y = x / sqrt(mean(x^2) + eps) * w, plain w (never 1 + w), no
// weight when w is empty, w in F32/BF16/F16 widened in registers. The sum of squares is
// accumulated in f32 lanes (each lane sums D / Lanes terms, so the rounding error stays ~1e-7
// relative for model widths); the scalar 1/sqrt is taken in f64 like the ref. Rows are split
// across the pool's threads. x and out may alias: each vector is loaded before it is stored.

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/cpu/export.h"
#include "kernels/cpu/kernels.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/rms_norm.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/cpu/util-inl.h"
#include "kernels/cpu/rms_norm-inl.h"

HWY_BEFORE_NAMESPACE();
namespace g4::cpu {
namespace HWY_NAMESPACE {
namespace {

template <typename TW>
void RmsNormTyped(ThreadPool& pool, const float* x, const TW* w, int64_t R, int64_t D, float eps,
                  float* out) {
  // ~32K elements per chunk before a second thread pays for its wake-up.
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 15) / std::max<int64_t>(1, D));
  pool.ParallelFor(R, grain, [&](int64_t begin, int64_t end) {
    RmsNormRows(x, w, D, eps, begin, end, out);
  });
}

}  // namespace

// x, out: [R, D] f32; w: [D] F32/BF16/F16 or empty.
void RmsNormImpl(ThreadPool& pool, const float* x, const TensorView& w, int64_t R, int64_t D,
                 float eps, float* out) {
  if (R <= 0 || D <= 0) return;
  if (w.empty()) {
    RmsNormTyped(pool, x, static_cast<const float*>(nullptr), R, D, eps, out);
    return;
  }
  ForFloatDType(w.dtype, w.data, out, R * D,
                [&](const auto* wt) HWY_ATTR { RmsNormTyped(pool, x, wt, R, D, eps, out); });
}

}  // namespace HWY_NAMESPACE
}  // namespace g4::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace g4::cpu {

G4_CPU_EXPORT(RmsNorm,
              (ThreadPool& pool, const float* x, const TensorView& w, int64_t R, int64_t D,
               float eps, float* out),
              (pool, x, w, R, D, eps, out))

}  // namespace g4::cpu
#endif  // HWY_ONCE
