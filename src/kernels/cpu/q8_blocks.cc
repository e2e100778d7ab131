// cpu::QuantizeQ8Blocks: g4::QuantizeQ8Blocks (core/q8_blocks.h) in Highway SIMD, bit for bit:
// the same absmax, the same f32 division for d and its inverse, the same f32 product x * id,
// rounded half away from zero as RoundToQ8 does (truncate, then step by one where the part cut
// off is at least a half), clamped to [-127, 127]. The int8-activation matmuls quantize every
// row of x with it (per call on the decode path; T rows a prefill chunk): the scalar loop took
// 20% of the samples of a run of 2048-token 270M prefills (perf, 2-core AVX-512 VM, the bench's
// probes included) and 2% of a decode run's.

#include <cstdint>

#include "core/q8_blocks.h"
#include "kernels/cpu/export.h"
#include "kernels/cpu/q8_blocks.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/q8_blocks.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace g4::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

void QuantizeQ8BlocksImpl(const float* HWY_RESTRICT x, int64_t K, int8_t* HWY_RESTRICT q,
                          float* HWY_RESTRICT d, int32_t* HWY_RESTRICT sum) {
  // At most a block's 32 lanes, so a vector never spans two blocks.
  const hn::CappedTag<float, kQ8Block> df;
  const hn::Rebind<int32_t, decltype(df)> di;
  const hn::Rebind<int8_t, decltype(df)> d8;
  const int64_t L = static_cast<int64_t>(hn::Lanes(df));
  const auto half = hn::Set(df, 0.5f), minus_half = hn::Set(df, -0.5f);
  const auto one = hn::Set(df, 1.0f), hi = hn::Set(df, 127.0f), lo = hn::Set(df, -127.0f);
  for (int64_t b = 0; b < K / kQ8Block; ++b) {
    const float* xb = x + b * kQ8Block;
    auto amax = hn::Zero(df);
    for (int64_t j = 0; j < kQ8Block; j += L) {
      amax = hn::Max(amax, hn::Abs(hn::LoadU(df, xb + j)));
    }
    const float db = hn::GetLane(hn::MaxOfLanes(df, amax)) / 127.0f;
    const auto id = hn::Set(df, db != 0.0f ? 1.0f / db : 0.0f);
    auto s = hn::Zero(di);
    for (int64_t j = 0; j < kQ8Block; j += L) {
      const auto v = hn::Mul(hn::LoadU(df, xb + j), id);
      auto r = hn::Trunc(v);
      const auto cut = hn::Sub(v, r);
      r = hn::Add(r, hn::IfThenElseZero(cut >= half, one));
      r = hn::Sub(r, hn::IfThenElseZero(cut <= minus_half, one));
      const auto i = hn::ConvertTo(di, hn::Min(hn::Max(r, lo), hi));
      s = hn::Add(s, i);
      hn::StoreU(hn::DemoteTo(d8, i), d8, q + b * kQ8Block + j);
    }
    d[b] = db;
    if (sum != nullptr) sum[b] = hn::GetLane(hn::SumOfLanes(di, s));
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace g4::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace g4::cpu {

G4_CPU_EXPORT(QuantizeQ8Blocks, (const float* x, int64_t K, int8_t* q, float* d, int32_t* sum),
              (x, K, q, d, sum))

void SumsOf16(const int8_t* q, int64_t K, int32_t* sums) {
  for (int64_t g = 0; g < K / 16; ++g) {
    int32_t s = 0;
    for (int64_t j = 0; j < 16; ++j) s += q[16 * g + j];
    sums[g] = s;
  }
}

}  // namespace g4::cpu
#endif  // HWY_ONCE
