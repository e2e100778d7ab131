// CPU GeluMul: out = gelu_tanh(gate) * up, Highway SIMD with runtime dispatch; must match
// g4::ref::GeluMul / g4::ref::GeluTanh (src/kernels/ref/gelu.cc) to ~1e-6 relative, evaluated in
// f32 (no lookup table, not the erf form). It uses the exact identity
//   0.5 * (1 + tanh(u)) = 1 / (1 + exp(-2u)),  u = sqrt(2/pi) * (x + 0.044715 x^3),
// i.e. gelu_tanh(x) = x / (1 + exp(-2u)): the same function as the tanh form, but the tanh form
// in f32 computes 1 + tanh(u) by cancellation for negative x (at x = -4, 1 + tanh(u) ~ 1e-6 and
// f32 keeps only ~1 correct digit of it), while this form keeps every value to a few ulp.
// gate, out: [R, n] f32; up: rows up_stride apart; out may alias gate, or up when up_stride == n.
// Split across the pool's threads (by elements when the rows are contiguous, else by rows).

#include <algorithm>
#include <cstdint>

#include "kernels/cpu/export.h"
#include "kernels/cpu/kernels.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/gelu.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
#include "kernels/cpu/util-inl.h"

HWY_BEFORE_NAMESPACE();
namespace g4::cpu {
namespace HWY_NAMESPACE {
namespace {

// gelu_tanh(g) * u for one vector.
HWY_INLINE VF GeluMulVec(DF df, VF g, VF u) {
  // -2u = g * (c1 + c2 g^2), c1 = -2 sqrt(2/pi), c2 = -2 sqrt(2/pi) * 0.044715.
  const VF c1 = hn::Set(df, -1.5957691216057308f);
  const VF c2 = hn::Set(df, -0.07135481627260025f);
  const VF minus_2u = hn::Mul(g, hn::MulAdd(hn::Mul(g, g), c2, c1));
  // Beyond -2u = 80 (g < ~-9.6) the true value is below |g| * 2e-35: return 0, as the ref does
  // (its 1 + tanh(u) is exactly 0 there). The clamp keeps exp finite, so huge |g| (whose cube
  // overflows to inf) cannot produce inf / inf.
  const VF kLimit = hn::Set(df, 80.0f);
  const VF e = hn::Exp(df, hn::Min(minus_2u, kLimit));
  const VF r = hn::Mul(hn::Div(g, hn::Add(hn::Set(df, 1.0f), e)), u);
  return hn::IfThenZeroElse(hn::Gt(minus_2u, kLimit), r);
}

void GeluMulRange(const float* gate, const float* up, int64_t begin, int64_t end, float* out) {
  const DF df;
  Transform2(df, gate + begin, up + begin, end - begin, out + begin,
             [](DF d, VF g, VF u) HWY_ATTR { return GeluMulVec(d, g, u); });
}

}  // namespace

void GeluMulImpl(ThreadPool& pool, const float* gate, const float* up, int64_t R, int64_t n,
                 int64_t up_stride, float* out) {
  if (R <= 0 || n <= 0) return;
  // ~32K elements per chunk (an exp each) before a second thread pays for its wake-up.
  constexpr int64_t kGrain = int64_t{1} << 15;
  if (R == 1 || up_stride == n) {
    pool.ParallelFor(R * n, kGrain, [&](int64_t begin, int64_t end) {
      GeluMulRange(gate, up, begin, end, out);
    });
    return;
  }
  pool.ParallelFor(R, std::max<int64_t>(1, kGrain / n), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      GeluMulRange(gate + r * n, up + r * up_stride, 0, n, out + r * n);
    }
  });
}

}  // namespace HWY_NAMESPACE
}  // namespace g4::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace g4::cpu {

G4_CPU_EXPORT(GeluMul,
              (ThreadPool& pool, const float* gate, const float* up, int64_t R, int64_t n,
               int64_t up_stride, float* out),
              (pool, gate, up, R, n, up_stride, out))

}  // namespace g4::cpu
#endif  // HWY_ONCE
