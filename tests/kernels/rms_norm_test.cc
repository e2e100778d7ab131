// g4::cpu::RmsNorm against g4::ref::RmsNorm: no weight and F32/BF16/F16 weights (plain w, never
// 1 + w), odd widths, misaligned rows, in-place use, pools of 1 and 3 threads.
// Tolerance: |y - ref| <= 1e-5 * |x * inv_rms * w| per element (that is ~|ref|). The kernel sums
// squares in f32 lanes (relative error <= ~(D/Lanes + Lanes) * 2^-24, <= 3e-6 at D = 1536 on
// 16 lanes, ~1e-7 typically) and rounds x * inv * w twice more (~2e-7); the ref is f64.

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/kernels.h"
#include "kernels/ref/kernels.h"
#include "kernels/test_util.h"

namespace g4 {
namespace {

using testing::FloatBuffer;
using testing::RandomFloats;
using testing::StoredTensor;

constexpr double kTol = 1e-5;

// max |y - ref| / |ref|; elements with ref == 0 must be exactly 0.
double MaxRelError(const std::vector<float>& y, const std::vector<float>& ref) {
  double worst = 0.0;
  for (size_t i = 0; i < y.size(); ++i) {
    const double err = std::fabs(static_cast<double>(y[i]) - ref[i]);
    const double e = ref[i] != 0 ? err / std::fabs(ref[i]) : (err > 0 ? INFINITY : 0.0);
    if (!(e <= worst)) worst = e;  // also propagates NaN
  }
  return worst;
}

// dtype == nullopt: no weight.
struct Case {
  std::vector<float> cpu, ref;
};

Case RunRmsNorm(ThreadPool& pool, std::optional<DType> wtype, int64_t R, int64_t D, bool misalign,
         bool in_place, uint32_t seed) {
  const std::vector<float> xv = RandomFloats(R * D, seed, -3.0f, 3.0f);
  // Weights around 1 with a spread, so 1 + w and w give clearly different results.
  const StoredTensor w(RandomFloats(D, seed + 1, -0.5f, 2.0f), wtype.value_or(DType::kF32), {D},
                       misalign);
  const TensorView wv = wtype ? w.view() : TensorView{};
  const float eps = 1e-6f;
  FloatBuffer x(xv, misalign);
  std::vector<float> ref(static_cast<size_t>(R * D));
  ref::RmsNorm(pool, x.data(), wv, R, D, eps, ref.data());
  if (in_place) {
    cpu::RmsNorm(pool, x.data(), wv, R, D, eps, x.data());
    return {x.ToVector(R * D), ref};
  }
  FloatBuffer y(R * D, misalign);
  cpu::RmsNorm(pool, x.data(), wv, R, D, eps, y.data());
  return {y.ToVector(R * D), ref};
}

class RmsNormTest
    : public ::testing::TestWithParam<std::tuple<std::optional<DType>, int, std::string>> {};

TEST_P(RmsNormTest, MatchesRef) {
  const auto [wtype, threads, target] = GetParam();
  const testing::ScopedTarget scoped_target(target);
  ASSERT_TRUE(scoped_target.ok()) << target;
  ThreadPool pool(threads);
  uint32_t seed = 10;
  for (int64_t D : {1, 7, 16, 31, 256, 1000, 1536, 2049}) {
    for (int64_t R : {1, 3, 7, 40}) {
      for (bool misalign : {false, true}) {
        for (bool in_place : {false, true}) {
          SCOPED_TRACE("D=" + std::to_string(D) + " R=" + std::to_string(R) +
                       " misalign=" + std::to_string(misalign) +
                       " in_place=" + std::to_string(in_place));
          const Case c = RunRmsNorm(pool, wtype, R, D, misalign, in_place, seed++);
          ASSERT_LE(MaxRelError(c.cpu, c.ref), kTol);
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(WeightsPoolsTargets, RmsNormTest,
                         ::testing::Combine(::testing::ValuesIn(testing::kNormWeights),
                                            ::testing::Values(1, 3),
                                            ::testing::ValuesIn(testing::Targets())),
                         testing::ParamNames());

// Plain w: a zero weight gives zero output (1 + w would pass x through normalized).
TEST(RmsNormExact, ZeroWeightGivesZero) {
  ThreadPool pool(1);
  const int64_t D = 37;
  const std::vector<float> x = RandomFloats(D, 3);
  const std::vector<float> w(static_cast<size_t>(D), 0.0f);
  std::vector<float> y(static_cast<size_t>(D), 1.0f);
  cpu::RmsNorm(pool, x.data(), TensorView{w.data(), DType::kF32, {D}}, 1, D, 1e-6f, y.data());
  for (float v : y) EXPECT_EQ(std::fabs(v), 0.0f);
}

TEST(RmsNormComparator, CatchesSmallErrors) {
  ThreadPool pool(1);
  Case c = RunRmsNorm(pool, DType::kBF16, 3, 257, false, false, 99);
  EXPECT_LE(MaxRelError(c.cpu, c.ref), kTol / 4);
  c.cpu[100] *= 1.0f + static_cast<float>(3 * kTol);
  EXPECT_GT(MaxRelError(c.cpu, c.ref), kTol);
}

}  // namespace
}  // namespace g4
