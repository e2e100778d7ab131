// Per-target row kernels of RmsNorm (rms_norm.cc), shared with ResidualNorm (residual_norm.cc):
// the inverse RMS of a row and the normalized, weighted rows. A Highway "-inl.h" (toggle guard,
// re-included per target); include it after "kernels/cpu/util-inl.h".

#if defined(G4_KERNELS_CPU_RMS_NORM_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef G4_KERNELS_CPU_RMS_NORM_INL_H_
#undef G4_KERNELS_CPU_RMS_NORM_INL_H_
#else
#define G4_KERNELS_CPU_RMS_NORM_INL_H_
#endif

#include <cmath>
#include <cstdint>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace g4::cpu {
namespace HWY_NAMESPACE {

// 1 / sqrt(mean(x^2) + eps) of one row x: [D].
HWY_INLINE float InvRms(const float* HWY_RESTRICT x, int64_t D, float eps) {
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
HWY_INLINE void RmsNormRows(const float* x, const TW* w, int64_t D, float eps, int64_t r_begin,
                            int64_t r_end, float* out) {
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

}  // namespace HWY_NAMESPACE
}  // namespace g4::cpu
HWY_AFTER_NAMESPACE();

#endif  // G4_KERNELS_CPU_RMS_NORM_INL_H_
