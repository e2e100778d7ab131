// cpu::QuantizeQ8Blocks gives g4::QuantizeQ8Blocks' integers, scales and sums exactly, on every
// Highway target this machine runs: random rows over six decades of magnitude, an all-zero
// block, blocks whose scaled values are exact halves (ties away from zero, not to even), and
// blocks whose absmax is negative.

#include "kernels/cpu/q8_blocks.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/q8_blocks.h"
#include "gtest/gtest.h"
#include "kernels/test_util.h"

namespace g4 {
namespace {

class Q8BlocksTest : public ::testing::TestWithParam<std::string> {};

struct Quantized {
  std::vector<int8_t> q;
  std::vector<float> d;
  std::vector<int32_t> sum;
};

template <class F>
Quantized QuantizeWith(const F& quantize, const std::vector<float>& x, bool sums) {
  const int64_t K = static_cast<int64_t>(x.size());
  Quantized out{std::vector<int8_t>(x.size(), 99), std::vector<float>(K / kQ8Block, -1.0f),
                std::vector<int32_t>(K / kQ8Block, -1)};
  quantize(x.data(), K, out.q.data(), out.d.data(), sums ? out.sum.data() : nullptr);
  return out;
}

// K values: random blocks of magnitudes 1e-3 .. 1e3, then block 0 all zero, block 1 exact halves
// (absmax 127 gives d = 1, so x * id is x), block 2 with a negative absmax.
std::vector<float> Row(int64_t K, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f), decade(-3.0f, 3.0f);
  std::vector<float> x(static_cast<size_t>(K));
  for (int64_t b = 0; b < K / kQ8Block; ++b) {
    const float scale = std::pow(10.0f, decade(rng));
    for (int64_t j = 0; j < kQ8Block; ++j) x[b * kQ8Block + j] = scale * u(rng);
  }
  if (K >= kQ8Block) std::fill(x.begin(), x.begin() + kQ8Block, 0.0f);
  if (K >= 2 * kQ8Block) {
    for (int64_t j = 0; j < kQ8Block; ++j) {
      x[kQ8Block + j] = (j % 2 ? -1.0f : 1.0f) * (static_cast<float>(4 * j) + 0.5f);
    }
    x[kQ8Block] = 127.0f;
  }
  if (K >= 3 * kQ8Block) x[2 * kQ8Block + 5] = -2000.0f;  // the random values stay within 1e3
  return x;
}

TEST_P(Q8BlocksTest, EqualsTheScalarQuantization) {
  testing::ScopedTarget target(GetParam());
  ASSERT_TRUE(target.ok()) << GetParam();
  for (const int64_t K : {32, 64, 96, 640, 2048, 2080}) {
    for (uint32_t seed = 1; seed <= 3; ++seed) {
      SCOPED_TRACE("K=" + std::to_string(K) + " seed=" + std::to_string(seed));
      const std::vector<float> x = Row(K, seed);
      for (const bool sums : {true, false}) {
        const Quantized want = QuantizeWith(g4::QuantizeQ8Blocks, x, sums);
        const Quantized got = QuantizeWith(cpu::QuantizeQ8Blocks, x, sums);
        EXPECT_EQ(got.q, want.q);
        EXPECT_EQ(got.d, want.d);
        EXPECT_EQ(got.sum, want.sum);  // untouched (-1) without sums
      }
    }
  }
}

TEST_P(Q8BlocksTest, HalvesRoundAwayFromZero) {
  testing::ScopedTarget target(GetParam());
  ASSERT_TRUE(target.ok()) << GetParam();
  std::vector<float> x(kQ8Block, 0.0f);
  x[0] = 127.0f;  // d = 1
  x[1] = 2.5f;
  x[2] = -2.5f;
  x[3] = 0.5f;
  x[4] = -126.5f;
  const Quantized got = QuantizeWith(cpu::QuantizeQ8Blocks, x, true);
  EXPECT_EQ(got.d[0], 1.0f);
  EXPECT_EQ(std::vector<int>(got.q.begin(), got.q.begin() + 5),
            (std::vector<int>{127, 3, -3, 1, -127}));
  EXPECT_EQ(got.sum[0], 127 + 3 - 3 + 1 - 127);
}

INSTANTIATE_TEST_SUITE_P(Cpu, Q8BlocksTest, ::testing::ValuesIn(testing::Targets()),
                         [](const auto& info) { return info.param; });

// Each group of 16 summed on its own: -127 and 127 at the ends of a group cancel only inside it.
TEST(Q8BlocksSumsOf16Test, SumsEachGroupOf16) {
  std::vector<int8_t> q(64);
  for (size_t i = 0; i < q.size(); ++i) q[i] = static_cast<int8_t>(i % 16 == 0 ? -127 : i % 7);
  q[31] = 127;
  std::vector<int32_t> sums(4, -1);
  cpu::SumsOf16(q.data(), 64, sums.data());
  for (int g = 0; g < 4; ++g) {
    int32_t want = 0;
    for (int j = 0; j < 16; ++j) want += q[static_cast<size_t>(16 * g + j)];
    EXPECT_EQ(sums[static_cast<size_t>(g)], want) << "group " << g;
  }
  EXPECT_EQ(sums[1], 42);  // -127, then i % 7 for i = 17 .. 30, then 127
}

}  // namespace
}  // namespace g4
