// CPU ResidualNorm (ops/residual_norm.h), Highway SIMD with runtime dispatch; must match
// g4::ref::ResidualNorm: h = (h + RmsNorm(x) * w) * scale, then out = RmsNorm(h) * next_w, with
// RmsNorm's row kernels (rms_norm-inl.h). Each thread takes whole rows through both steps, so a
// row's h is still in cache for its second norm.

#include <algorithm>
#include <cstdint>

#include "kernels/cpu/export.h"
#include "kernels/cpu/kernels.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/residual_norm.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/cpu/util-inl.h"
#include "kernels/cpu/rms_norm-inl.h"

HWY_BEFORE_NAMESPACE();
namespace g4::cpu {
namespace HWY_NAMESPACE {
namespace {

// h[r] = (h[r] + x[r] * InvRms(x[r]) * w) * scale for rows [r_begin, r_end); w: nullptr = none.
template <typename TW>
void AddNormedRows(const float* x, const TW* w, float* h, float scale, int64_t D, float eps,
                   int64_t r_begin, int64_t r_end) {
  const DF df;
  const int64_t L = static_cast<int64_t>(hn::Lanes(df));
  const VF vs = hn::Set(df, scale);
  for (int64_t r = r_begin; r < r_end; ++r) {
    const float* xr = x + r * D;
    float* hr = h + r * D;
    const float inv = InvRms(xr, D, eps);
    const VF vinv = hn::Set(df, inv);
    int64_t d = 0;
    for (; d + L <= D; d += L) {
      VF v = hn::Mul(hn::LoadU(df, xr + d), vinv);
      if (w != nullptr) v = hn::Mul(v, LoadWidened(df, w + d));
      hn::StoreU(hn::Mul(hn::Add(hn::LoadU(df, hr + d), v), vs), df, hr + d);
    }
    for (; d < D; ++d) {
      const float v = xr[d] * inv * (w != nullptr ? WidenScalar(w[d]) : 1.0f);
      hr[d] = (hr[d] + v) * scale;
    }
  }
}

// Calls f(typed weights) for w in F32/BF16/F16, f(nullptr as const float*) for no weight;
// another dtype zeroes out[0, out_size) (ForFloatDType).
template <class F>
void WithWeights(const TensorView* w, float* out, int64_t out_size, const F& f) {
  if (w == nullptr || w->empty()) return f(static_cast<const float*>(nullptr));
  ForFloatDType(w->dtype, w->data, out, out_size, f);
}

}  // namespace

void ResidualNormImpl(ThreadPool& pool, const ResidualNormArgs& a) {
  if (a.R <= 0 || a.D <= 0) return;
  const int64_t D = a.D;
  // ~32K elements per chunk before a second thread pays for its wake-up (as RmsNorm).
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 15) / D);
  pool.ParallelFor(a.R, grain, [&](int64_t begin, int64_t end) {
    WithWeights(a.w, a.h, 0, [&](const auto* w) HWY_ATTR {
      AddNormedRows(a.x, w, a.h, a.scale, D, a.eps, begin, end);
    });
    if (a.out == nullptr) return;
    WithWeights(a.next_w, a.out + begin * D, (end - begin) * D, [&](const auto* nw) HWY_ATTR {
      RmsNormRows(a.h, nw, D, a.eps, begin, end, a.out);
    });
  });
}

}  // namespace HWY_NAMESPACE
}  // namespace g4::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace g4::cpu {

G4_CPU_EXPORT(ResidualNorm, (ThreadPool& pool, const ResidualNormArgs& a), (pool, a))

}  // namespace g4::cpu
#endif  // HWY_ONCE
