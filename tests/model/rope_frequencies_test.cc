// Gemma 4's RoPE frequencies and norm epsilon pinned by transformers 5.24 itself: values printed
// once from its rotary embedding for the released layer types and pasted here, so a rule changed
// in g4 and in its own tests alike (config_test.cc restates the formula) still fails.
#include <gtest/gtest.h>

#include <cmath>
#include <utility>
#include <vector>

#include "model/gemma4/config.h"
#include "synthetic/gemma4.h"

namespace g4 {
namespace {

using json = nlohmann::json;

// rot = Gemma4TextRotaryEmbedding(Gemma4TextConfig())  (head dims 256 sliding, 512 global)
// rot.sliding_attention_inv_freq[j]: default, theta 1e4, 128 pairs
const std::vector<std::pair<int, float>> kSliding = {
    {0, 1.0f},           {1, 0.930572033f},   {2, 0.865964353f},      {31, 0.107460782f},
    {63, 0.0107460786f}, {64, 0.00999999978f}, {127, 0.000107460779f}};
// rot.full_attention_inv_freq[j]: proportional, theta 1e6, partial_rotary_factor 0.25: 64 of
// 256 pairs rotate, the exponent over 512
const std::vector<std::pair<int, float>> kFull = {
    {0, 1.0f},          {1, 0.947463512f}, {2, 0.897687137f}, {31, 0.187688425f},
    {63, 0.0333762467f}, {64, 0.0f},        {127, 0.0f},       {255, 0.0f}};

TEST(RopeFrequenciesTest, E2bFrequenciesAreTransformers) {
  SyntheticOptions o;
  o.preset = "e2b";
  auto c = ParseGemma4Config(json::parse(SyntheticConfig(o)->dump()), nullptr);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const std::vector<float> sliding = c->InvFreq(c->layers[0]);
  const std::vector<float> full = c->InvFreq(c->layers[4]);
  ASSERT_TRUE(c->layers[0].sliding());
  ASSERT_FALSE(c->layers[4].sliding());
  ASSERT_EQ(sliding.size(), 128u);
  ASSERT_EQ(full.size(), 256u);
  // transformers rounds base ** (2j / d) in f32 before the reciprocal: within 2 ulps.
  for (const auto& [j, f] : kSliding) EXPECT_NEAR(sliding[j], f, 2.4e-7 * f) << "sliding " << j;
  for (const auto& [j, f] : kFull) EXPECT_NEAR(full[j], f, 2.4e-7 * f) << "full " << j;
  // Gemma4TextConfig().rms_norm_eps
  EXPECT_EQ(c->rms_norm_eps, 1e-6);
}

}  // namespace
}  // namespace g4
