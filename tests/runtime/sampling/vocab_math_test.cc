// Tests for the sampler's vocabulary-wide passes: FastExp against std::exp, the sanitising
// max, the weight bands and the sums.
#include "runtime/sampling/vocab_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace g4::vocab_math {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(VocabMathTest, FastExpMatchesStdExp) {
  EXPECT_EQ(FastExp(0.0f), 1.0f);
  EXPECT_EQ(FastExp(-0.0f), 1.0f);
  EXPECT_EQ(FastExp(-kInf), 0.0f);
  EXPECT_EQ(FastExp(-87.5f), 0.0f);
  EXPECT_EQ(FastExp(-1000.0f), 0.0f);
  EXPECT_EQ(FastExp(-std::numeric_limits<float>::quiet_NaN()), 0.0f);
  double worst = 0.0;
  for (float x = 0.0f; x >= -87.0f; x -= 0.001953125f) {  // 44544 points, 2^-9 apart
    const double want = std::exp(static_cast<double>(x));
    worst = std::max(worst, std::abs(FastExp(x) - want) / want);
  }
  EXPECT_LT(worst, 3e-7);
  // Monotone on a fine grid (what the ranking of tokens relies on).
  float prev = FastExp(-20.0f);
  for (float x = -20.0f + 1e-4f; x <= 0.0f; x += 1e-4f) {
    const float e = FastExp(x);
    ASSERT_GE(e, prev) << x;
    prev = e;
  }
}

TEST(VocabMathTest, ExpWeightsIsOneAtTheMax) {
  const std::vector<float> logits = {1.0f, 3.0f, -kInf, 2.0f, 3.0f};
  std::vector<float> w(logits.size());
  ExpWeights(logits.data(), logits.size(), 3.0f, 0.5f, w.data());
  EXPECT_EQ(w[1], 1.0f);
  EXPECT_EQ(w[4], 1.0f);
  EXPECT_EQ(w[2], 0.0f);
  EXPECT_NEAR(w[0], std::exp(-1.0), 1e-7);  // (1 - 3) / T with T = 2
  EXPECT_NEAR(w[3], std::exp(-0.5), 1e-7);
}

TEST(VocabMathTest, SanitizeAndMax) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> plain = {-1.0f, 2.5f, -kInf, 0.0f, 2.0f};
  EXPECT_EQ(SanitizeAndMax(plain.data(), plain.size()), 2.5f);
  EXPECT_EQ(plain[2], -kInf);  // -inf is left alone

  for (float bad_nan : {nan, -nan}) {
    std::vector<float> v(37, -3.0f);
    v[5] = bad_nan;
    v[20] = 1.5f;
    EXPECT_EQ(SanitizeAndMax(v.data(), v.size()), 1.5f);
    EXPECT_EQ(v[5], -kInf);
  }
  std::vector<float> with_inf = {1.0f, kInf, nan, -kInf};
  EXPECT_EQ(SanitizeAndMax(with_inf.data(), with_inf.size()), std::numeric_limits<float>::max());
  EXPECT_EQ(with_inf[1], std::numeric_limits<float>::max());
  EXPECT_EQ(with_inf[2], -kInf);
  std::vector<float> all_masked = {-kInf, nan, -kInf};
  EXPECT_EQ(SanitizeAndMax(all_masked.data(), all_masked.size()), -kInf);
  EXPECT_EQ(SanitizeAndMax(nullptr, 0), -kInf);
  std::vector<float> negative = {-5.0f, -0.5f, -7.0f};
  EXPECT_EQ(SanitizeAndMax(negative.data(), negative.size()), -0.5f);
}

TEST(VocabMathTest, WeightBandsAreMonotoneWithEightPerOctave) {
  EXPECT_EQ(WeightBand(1.0f), 0);
  EXPECT_EQ(WeightBand(0.94f), 0);
  EXPECT_EQ(WeightBand(0.9f), 1);
  EXPECT_EQ(WeightBand(0.5f), 8);
  EXPECT_EQ(WeightBand(std::numeric_limits<float>::min()), 1008);
  EXPECT_EQ(WeightBand(0.0f), kWeightBands - 1);
  EXPECT_EQ(BandFloor(kWeightBands - 2), 0.0f);
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> u(-87.0f, 0.0f);
  for (int i = 0; i < 10000; ++i) {
    const float w = FastExp(u(gen));
    const int b = WeightBand(w);
    ASSERT_GT(w, BandFloor(b));
    if (b > 0) {
      ASSERT_LE(w, BandFloor(b - 1));
    }
  }
}

TEST(VocabMathTest, SumAndMassByBand) {
  std::mt19937 gen(2);
  std::uniform_real_distribution<float> u(-30.0f, 0.0f);
  std::vector<float> w(100003);
  for (float& x : w) x = FastExp(u(gen));
  w[7] = 0.0f;
  double want = 0.0;
  for (float x : w) want += x;
  EXPECT_NEAR(Sum(w.data(), w.size()), want, want * 1e-9);
  std::vector<double> hist(kMassByBandScratch);
  MassByBand(w.data(), w.size(), hist.data());
  double total = 0.0;
  for (int b = 0; b < kWeightBands; ++b) total += hist[b];
  EXPECT_NEAR(total, want, want * 1e-12);
  double band8 = 0.0;  // [0.5, 0.545)
  for (float x : w) band8 += WeightBand(x) == 8 ? x : 0.0;
  EXPECT_NEAR(hist[8], band8, 1e-9);
}

}  // namespace
}  // namespace g4::vocab_math
