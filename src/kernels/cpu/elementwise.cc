// CPU Add (out = a + b) and Scale (x *= s) of the residual stream, Highway SIMD with runtime
// dispatch; must match g4::ref::Add / g4::ref::Scale (src/kernels/ref/elementwise.cc) exactly:
// one f32 add or multiply per element, as in the ref. a, b, out, x: [n] f32; out may alias a or b.

#include <algorithm>
#include <cstdint>

#include "kernels/cpu/export.h"
#include "kernels/cpu/kernels.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/elementwise.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/cpu/util-inl.h"

HWY_BEFORE_NAMESPACE();
namespace g4::cpu {
namespace HWY_NAMESPACE {
namespace {

// These are a few ns per KB: only residual-sized arrays far beyond a model width are worth
// splitting across threads.
constexpr int64_t kGrain = int64_t{1} << 16;

void AddRange(const float* a, const float* b, int64_t begin, int64_t end, float* out) {
  const DF df;
  Transform2(df, a + begin, b + begin, end - begin, out + begin,
             [](DF, VF va, VF vb) HWY_ATTR { return hn::Add(va, vb); });
}

void ScaleRange(float* x, int64_t begin, int64_t end, float s) {
  const DF df;
  Transform2(df, x + begin, x + begin, end - begin, x + begin,
             [s](DF d, VF v, VF) HWY_ATTR { return hn::Mul(v, hn::Set(d, s)); });
}

}  // namespace

void AddImpl(ThreadPool& pool, const float* a, const float* b, int64_t n, float* out) {
  pool.ParallelFor(n, kGrain, [&](int64_t begin, int64_t end) { AddRange(a, b, begin, end, out); });
}

void ScaleImpl(ThreadPool& pool, float* x, int64_t n, float s) {
  pool.ParallelFor(n, kGrain, [&](int64_t begin, int64_t end) { ScaleRange(x, begin, end, s); });
}

}  // namespace HWY_NAMESPACE
}  // namespace g4::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace g4::cpu {

G4_CPU_EXPORT(Add, (ThreadPool& pool, const float* a, const float* b, int64_t n, float* out),
              (pool, a, b, n, out))
G4_CPU_EXPORT(Scale, (ThreadPool& pool, float* x, int64_t n, float s), (pool, x, n, s))

}  // namespace g4::cpu
#endif  // HWY_ONCE
