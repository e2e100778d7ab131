// ops/quantize_gguf: every quantizer's blocks dequantize (core/gguf_blocks.h, the reference)
// to within its documented error bound of the input, on random rows of mixed magnitudes;
// llama.cpp's exact rules for Q4_0 / Q8_0 on hand-picked values; bad arguments are errors.
#include "ops/quantize_gguf.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "core/dtype.h"
#include "core/gguf_blocks.h"
#include "kernels/test_util.h"

namespace g4 {
namespace {

// Rows whose blocks have very different ranges (x1e-2 .. x1e2), a zero block and a constant one.
std::vector<float> TestRow(int64_t K, uint32_t seed) {
  std::vector<float> w = testing::RandomFloats(K, seed);
  std::mt19937 rng(seed);
  for (int64_t b = 0; b < K / 32; ++b) {
    const float m = std::pow(10.0f, static_cast<float>(rng() % 5) - 2.0f);
    for (int64_t j = 0; j < 32; ++j) w[b * 32 + j] *= m;
  }
  for (int64_t j = 0; j < 32; ++j) w[j] = 0.0f;
  for (int64_t j = 32; j < 64; ++j) w[j] = -0.75f;
  return w;
}

struct Case {
  QuantKind kind;
  // Bound on |w - dequant(w)| relative to the max |w| of the element's own bound region (the
  // block for Q4_0 / Q8_0, the 256-element super-block for the K-quants: their scales are
  // shared through 6-/8-bit multiples of one block scale).
  double rel_bound;
  // Plus an absolute term: a small block's f16 scale d can be subnormal (< 2^-14), where f16
  // spacing is 2^-24, so d is off by up to 2^-25, times the largest integer d multiplies.
  double abs_bound;
};

class QuantizeGgufTest : public ::testing::TestWithParam<Case> {};

TEST_P(QuantizeGgufTest, RoundTripWithinBound) {
  const Case c = GetParam();
  const BlockFormat f = GgufBlockFormat(c.kind);
  const int64_t K = 256 * 6;
  for (uint32_t seed = 1; seed <= 4; ++seed) {
    const std::vector<float> w = TestRow(K, seed);
    std::vector<uint8_t> row(static_cast<size_t>(K / f.elems * f.bytes));
    ASSERT_TRUE(QuantizeGgufRow(c.kind, w.data(), K, row.data()).ok());
    std::vector<float> y(static_cast<size_t>(K));
    DequantizeGgufRow(c.kind, row.data(), K, y.data());
    double worst = 0.0;
    for (int64_t b0 = 0; b0 < K; b0 += f.elems) {
      double amax = 0.0;
      for (int64_t j = 0; j < f.elems; ++j) amax = std::max(amax, std::fabs(double{w[b0 + j]}));
      for (int64_t j = 0; j < f.elems; ++j) {
        const double err = std::fabs(double{y[b0 + j]} - w[b0 + j]);
        ASSERT_TRUE(std::isfinite(y[b0 + j]));
        if (amax == 0.0) {
          EXPECT_EQ(y[b0 + j], 0.0f) << "a zero block stays zero";
        } else {
          EXPECT_LE(err, c.rel_bound * amax + c.abs_bound) << QuantKindName(c.kind) << " seed " << seed << " k " << b0 + j;
          worst = std::max(worst, err / amax);
        }
      }
    }
    std::printf("%s seed %u: max |err| / block absmax = %.4g (bound %.4g)\n", QuantKindName(c.kind), seed,
                worst, c.rel_bound);
  }
}

// Q4_0: 1 / 16 of the range per step, half a step of rounding, plus one step at the top clamp
// (f16 rounding of d adds ~2^-11 relative). Q8_0: half of 1/127. Q4_K: a step is up to
// range / 15 of a sub-block and the 6-bit mins round up by < dmin = 1/63 of the largest min:
// bound ~ 1/30 + 1/63 + slack. Q6_K: half a step of absmax / 31.5 plus the 8-bit scale rounding.
INSTANTIATE_TEST_SUITE_P(Kinds, QuantizeGgufTest,
                         ::testing::Values(Case{QuantKind::kQ4_0, 1.0 / 8 + 1e-3, 8 * 0x1p-25},
                                           Case{QuantKind::kQ8_0, 0.5 / 127 + 1e-3, 127 * 0x1p-25},
                                           Case{QuantKind::kQ4_K, 1.0 / 15, (63 * 15 + 63) * 0x1p-25},
                                           Case{QuantKind::kQ6_K, 1.0 / 31.5, 127 * 32 * 0x1p-25}),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           return std::string(QuantKindName(i.param.kind));
                         });

TEST(QuantizeGgufRulesTest, Q4_0UsesTheSignedMaxOverMinus8) {
  std::vector<float> w(32, 0.0f);
  w[3] = -4.0f;  // the signed max: d = -4 / -8 = 0.5, -4 -> q 0
  w[5] = 3.0f;   // 3 / 0.5 + 8.5 = 14.5 -> trunc 14
  w[7] = 0.26f;  // 0.52 + 8.5 -> 9
  uint8_t b[18];
  ASSERT_TRUE(QuantizeGgufRow(QuantKind::kQ4_0, w.data(), 32, b).ok());
  uint16_t d;
  std::memcpy(&d, b, 2);
  EXPECT_EQ(F16ToF32(d), 0.5f);
  EXPECT_EQ(b[2 + 3] & 0xF, 0);
  EXPECT_EQ(b[2 + 5] & 0xF, 14);
  EXPECT_EQ(b[2 + 7] & 0xF, 9);
  EXPECT_EQ(b[2 + 0] & 0xF, 8);  // zero
  // Positive extreme: d = 4 / -8 = -0.5, and 4 -> 4 / -0.5 + 8.5 = 0.5 -> 0.
  w[3] = 4.0f;
  ASSERT_TRUE(QuantizeGgufRow(QuantKind::kQ4_0, w.data(), 32, b).ok());
  std::memcpy(&d, b, 2);
  EXPECT_EQ(F16ToF32(d), -0.5f);
  EXPECT_EQ(b[2 + 3] & 0xF, 0);
}

TEST(QuantizeGgufRulesTest, Q8_0UsesAmaxOver127) {
  std::vector<float> w(32, 0.0f);
  w[0] = 127.0f;
  w[1] = -63.5f;  // rounds half away from zero: -64
  w[2] = 0.4f;
  uint8_t b[34];
  ASSERT_TRUE(QuantizeGgufRow(QuantKind::kQ8_0, w.data(), 32, b).ok());
  uint16_t d;
  std::memcpy(&d, b, 2);
  EXPECT_EQ(F16ToF32(d), 1.0f);
  EXPECT_EQ(static_cast<int8_t>(b[2]), 127);
  EXPECT_EQ(static_cast<int8_t>(b[3]), -64);
  EXPECT_EQ(static_cast<int8_t>(b[4]), 0);
}

TEST(QuantizeGgufRulesTest, BadArguments) {
  std::vector<float> w(512, 1.0f);
  std::vector<uint8_t> out(1024);
  EXPECT_EQ(QuantizeGgufRow(QuantKind::kQ4_K, w.data(), 100, out.data()).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(QuantizeGgufRow(QuantKind::kQ4_0, w.data(), 0, out.data()).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(QuantizeGgufRow(QuantKind::kInt4Group, w.data(), 32, out.data()).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(QuantizeGgufRow(QuantKind::kQ5_K, w.data(), 256, out.data()).code(), StatusCode::kUnimplemented);
  EXPECT_FALSE(CanQuantizeGguf(QuantKind::kQ5_0));
  EXPECT_TRUE(CanQuantizeGguf(QuantKind::kQ6_K));
}

}  // namespace
}  // namespace g4
