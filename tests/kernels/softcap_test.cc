// g4::cpu::Softcap against g4::ref::Softcap (cap * tanh(x / cap) in f64): caps 30 (Gemma 4's
// final logits), 1 and 50, inputs spanning the linear and saturated ranges plus specials, odd
// lengths, misaligned buffers, pools of 1 and 3 threads.
// Tolerance: |out - ref| <= 8 * 2^-24 * |ref| (~4.8e-7 relative): Highway's f32 Tanh is
// documented to 4 ulp, the division x / cap and the product by cap round once each, and
// tanh'(y) * y / tanh(y) <= 1, so the division's rounding is not amplified.

#include <cmath>
#include <cstdint>
#include <limits>
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

const double kRelTol = 8 * std::ldexp(1.0, -24);

double MaxRelError(const std::vector<float>& out, const std::vector<float>& ref) {
  double worst = 0.0;
  for (size_t i = 0; i < out.size(); ++i) {
    const double err = std::fabs(static_cast<double>(out[i]) - ref[i]);
    const double e = ref[i] != 0 ? err / std::fabs(ref[i]) : (err > 0 ? INFINITY : 0.0);
    if (!(e <= worst)) worst = e;  // also propagates NaN
  }
  return worst;
}

std::vector<float> Logits(int64_t n, uint32_t seed, float cap) {
  std::vector<float> x = RandomFloats(n, seed, -4 * cap, 4 * cap);
  const float specials[] = {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-4f, 1e4f, -1e4f, 3e38f, -3e38f};
  for (size_t i = 0; i < sizeof(specials) / sizeof(specials[0]) && i < x.size(); ++i) {
    x[(i * 104729) % x.size()] = specials[i];
  }
  return x;
}

class SoftcapTest : public ::testing::TestWithParam<std::tuple<int, std::string>> {
 protected:
  int threads() const { return std::get<0>(GetParam()); }
  const std::string& target() const { return std::get<1>(GetParam()); }
};

TEST_P(SoftcapTest, MatchesRef) {
  const testing::ScopedTarget scoped_target(target());
  ASSERT_TRUE(scoped_target.ok()) << target();
  ThreadPool pool(threads());
  uint32_t seed = 1;
  for (float cap : {30.0f, 1.0f, 50.0f}) {
    for (int64_t n : {1, 7, 15, 16, 17, 33, 1000, 262147}) {
      for (bool misalign : {false, true}) {
        SCOPED_TRACE("cap=" + std::to_string(cap) + " n=" + std::to_string(n) +
                     " misalign=" + std::to_string(misalign));
        const std::vector<float> xv = Logits(n, seed++, cap);
        std::vector<float> ref = xv;
        ref::Softcap(pool, ref.data(), n, cap);
        FloatBuffer x(xv, misalign);
        cpu::Softcap(pool, x.data(), n, cap);
        ASSERT_LE(MaxRelError(x.ToVector(n), ref), kRelTol);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(PoolsTargets, SoftcapTest,
                         ::testing::Combine(::testing::Values(1, 3),
                                            ::testing::ValuesIn(testing::Targets())),
                         testing::ParamNames());

TEST(SoftcapComparator, CatchesSmallErrors) {
  ThreadPool pool(1);
  const int64_t n = 100;
  std::vector<float> x = Logits(n, 3, 30.0f), ref = x;
  cpu::Softcap(pool, x.data(), n, 30.0f);
  ref::Softcap(pool, ref.data(), n, 30.0f);
  EXPECT_LE(MaxRelError(x, ref), kRelTol);
  x[50] *= 1.0f + 1e-6f;
  EXPECT_GT(MaxRelError(x, ref), kRelTol);
}

}  // namespace
}  // namespace g4
