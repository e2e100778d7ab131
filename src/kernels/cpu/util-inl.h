// Per-target helpers shared by the CPU kernels: the full-width f32 tag, loading a vector of
// weights stored as F32, BF16 or F16 and widening it to f32 lanes in registers, the scalar
// widening used in tails, the dtype switch that picks a kernel's instantiation, and an
// elementwise driver whose tail runs through the same SIMD code on a padded copy.
// The widening must match g4::Bf16ToF32 / g4::F16ToF32 (src/core/dtype.h) bit for bit, so the
// SIMD body and the scalar tail of a kernel see the same f32 values as the ref kernels do.
// This is a Highway "-inl.h": it is re-included once per target by foreach_target.h, hence the
// toggle guard below instead of #pragma once. Include it after "hwy/highway.h".

#if defined(G4_KERNELS_CPU_UTIL_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef G4_KERNELS_CPU_UTIL_INL_H_
#undef G4_KERNELS_CPU_UTIL_INL_H_
#else
#define G4_KERNELS_CPU_UTIL_INL_H_
#endif

#include <cstdint>
#include <cstring>

#include "core/dtype.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace g4::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The f32 vector of the target's full width, which most kernels use.
using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// Lanes(df) f32 values from p (any alignment).
template <class DF>
HWY_INLINE hn::Vec<DF> LoadWidened(DF df, const float* HWY_RESTRICT p) {
  return hn::LoadU(df, p);
}

// BF16 is the upper half of an f32: zero-extend each u16 to u32 and shift it into place. Exact.
template <class DF>
HWY_INLINE hn::Vec<DF> LoadWidened(DF df, const hwy::bfloat16_t* HWY_RESTRICT p) {
  const hn::RebindToUnsigned<DF> du32;
  const hn::Rebind<uint16_t, DF> du16;
  const auto bits = hn::LoadU(du16, reinterpret_cast<const uint16_t*>(p));
  return hn::BitCast(df, hn::ShiftLeft<16>(hn::PromoteTo(du32, bits)));
}

// F16 -> f32 is exact for finite values (F16C on AVX2/AVX3, FCVT on NEON). Highway's SSE4/EMU128
// software path does not map F16 inf/NaN to f32 inf/NaN; checkpoint weights are finite.
template <class DF>
HWY_INLINE hn::Vec<DF> LoadWidened(DF df, const hwy::float16_t* HWY_RESTRICT p) {
  const hn::Rebind<hwy::float16_t, DF> df16;
  return hn::PromoteTo(df, hn::LoadU(df16, p));
}

// Scalar twins of LoadWidened for the tails.
// hwy::float16_t is __fp16 on aarch64 GCC and a struct elsewhere, so read the raw bits by memcpy.
HWY_INLINE float WidenScalar(float v) { return v; }
HWY_INLINE float WidenScalar(hwy::bfloat16_t v) {
  uint16_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  return Bf16ToF32(bits);
}
HWY_INLINE float WidenScalar(hwy::float16_t v) {
  uint16_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  return F16ToF32(bits);
}

// Calls f(p) with data as the element pointer of a float dtype (const float*, const
// hwy::bfloat16_t* or const hwy::float16_t*), so one template body serves the three weight
// dtypes. Any other dtype (callers validate dtypes) zeroes out[0, out_size) instead: the ref
// kernels read such weights as 0.
template <class F>
HWY_INLINE void ForFloatDType(DType dtype, const void* data, float* out, int64_t out_size,
                              const F& f) {
  switch (dtype) {
    case DType::kF32:
      return f(static_cast<const float*>(data));
    case DType::kBF16:
      return f(static_cast<const hwy::bfloat16_t*>(data));
    case DType::kF16:
      return f(static_cast<const hwy::float16_t*>(data));
    default:
      std::memset(out, 0, static_cast<size_t>(out_size) * sizeof(float));
  }
}

// Sum of the lanes of v as a scalar.
template <class DF>
HWY_INLINE float ReduceSum(DF df, hn::Vec<DF> v) {
  return hn::GetLane(hn::SumOfLanes(df, v));
}

// out[i] = f(df, a[i], b[i]) for i in [0, n), a vector at a time (f: (DF, VF, VF) -> VF). The
// n % Lanes tail goes through f too, on zero-padded copies, so every element gets the same math
// whatever its index; out may alias a or b (each vector is loaded before it is stored).
template <class DF, class F>
HWY_INLINE void Transform2(DF df, const float* a, const float* b, int64_t n, float* out, F f) {
  const int64_t L = static_cast<int64_t>(hn::Lanes(df));
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    hn::StoreU(f(df, hn::LoadU(df, a + i), hn::LoadU(df, b + i)), df, out + i);
  }
  if (i < n) {
    HWY_ALIGN float ta[HWY_MAX_BYTES / sizeof(float)] = {};
    HWY_ALIGN float tb[HWY_MAX_BYTES / sizeof(float)] = {};
    const size_t rest = static_cast<size_t>(n - i);
    std::memcpy(ta, a + i, rest * sizeof(float));
    std::memcpy(tb, b + i, rest * sizeof(float));
    hn::Store(f(df, hn::Load(df, ta), hn::Load(df, tb)), df, ta);
    std::memcpy(out + i, ta, rest * sizeof(float));
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace g4::cpu
HWY_AFTER_NAMESPACE();

#endif  // G4_KERNELS_CPU_UTIL_INL_H_
