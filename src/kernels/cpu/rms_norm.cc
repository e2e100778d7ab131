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

HWY_BEFORE_NAMESPACE();
namespace g4::cpu {
namespace HWY_NAMESPACE {
namespace {

// 1 / sqrt(mean(x^2) + eps) of one row x: [D].
float InvRms(const float* HWY_RESTRICT x, int64_t D, float eps) {
  const DF df;
  const int64_t L = static_cast<int64_t>(hn::Lanes(df));
  // Two accumulators halve the dependency chain of the FMAs.
  VF s0 = hn::Zero(df), s1 = s0;
  int64_t d = 0;
  for (; d + 2 * L <= D; d += 2 * L) {
    const VF a = hn::LoadU(df, x + d), b = hn::LoadU(df, x + d + L);
    s0 = hn::MulAdd(a, a, s0);
    s1 = hn::MulAdd(b, b, s1);
  }
  for (; d + L <= D; d += L) {
    const VF a = hn::LoadU(df, x + d);
    s0 = hn::MulAdd(a, a, s0);
  }
  double ss = ReduceSum(df, hn::Add(s0, s1));
  for (; d < D; ++d) ss += static_cast<double>(x[d]) * x[d];
  return static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(D) + eps));
}

// Rows [r_begin, r_end) of x, out: [R, D]; w: [D] (nullptr: no weight).
template <typename TW>
void RmsNormRows(const float* x, const TW* w, int64_t D, float eps, int64_t r_begin, int64_t r_end,
                 float* out) {
  const DF df;
  const int64_t L = static_cast<int64_t>(hn::Lanes(df));
  for (int64_t r = r_begin; r < r_end; ++r) {
    const float* xr = x + r * D;
    float* yr = out + r * D;
    const float inv = InvRms(xr, D, eps);
    const VF vinv = hn::Set(df, inv);
    int64_t d = 0;
    if (w == nullptr) {
      for (; d + L <= D; d += L) hn::StoreU(hn::Mul(hn::LoadU(df, xr + d), vinv), df, yr + d);
      for (; d < D; ++d) yr[d] = xr[d] * inv;
    } else {
      for (; d + L <= D; d += L) {
        const VF v = hn::Mul(hn::LoadU(df, xr + d), vinv);
        hn::StoreU(hn::Mul(v, LoadWidened(df, w + d)), df, yr + d);
      }
      for (; d < D; ++d) yr[d] = xr[d] * inv * WidenScalar(w[d]);
    }
  }
}

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
