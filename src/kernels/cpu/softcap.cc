// CPU Softcap: x = cap * tanh(x / cap) in place, Highway SIMD with runtime dispatch; must match
// g4::ref::Softcap (src/kernels/ref/softcap.cc, f64) to a few f32 ulp. Used on the final logits
// ([n] f32, n = vocab 262144 at decode), so it is split across the pool's threads.

#include <algorithm>
#include <cstdint>

#include "kernels/cpu/export.h"
#include "kernels/cpu/kernels.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/softcap.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
#include "kernels/cpu/util-inl.h"

HWY_BEFORE_NAMESPACE();
namespace g4::cpu {
namespace HWY_NAMESPACE {
namespace {

void SoftcapRange(float* x, int64_t begin, int64_t end, float cap) {
  const DF df;
  // Div, not a multiply by 1/cap: one rounding fewer, and the kernel is memory bound anyway.
  // The lambda captures the float, not a vector (sizeless SVE vectors cannot be captured).
  Transform2(df, x + begin, x + begin, end - begin, x + begin, [cap](DF d, VF v, VF) HWY_ATTR {
    const VF vcap = hn::Set(d, cap);
    return hn::Mul(vcap, hn::Tanh(d, hn::Div(v, vcap)));
  });
}

}  // namespace

// x: [n] f32, in place.
void SoftcapImpl(ThreadPool& pool, float* x, int64_t n, float cap) {
  // ~32K elements per chunk (a tanh each) before a second thread pays for its wake-up.
  pool.ParallelFor(n, int64_t{1} << 15, [&](int64_t begin, int64_t end) {
    SoftcapRange(x, begin, end, cap);
  });
}

}  // namespace HWY_NAMESPACE
}  // namespace g4::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace g4::cpu {

G4_CPU_EXPORT(Softcap, (ThreadPool& pool, float* x, int64_t n, float cap), (pool, x, n, cap))

}  // namespace g4::cpu
#endif  // HWY_ONCE
