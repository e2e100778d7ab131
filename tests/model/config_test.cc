// ModelConfig parsing: both config forms, per-layer expansion (head dims, KV heads, donors,
// MLP widths), and refusals with messages that name the field.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model/gemma4/config.h"
#include "synthetic/gemma4.h"

namespace g4 {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;

json E2bConfig() {
  SyntheticOptions o;
  o.preset = "e2b";
  return json::parse(SyntheticConfig(o)->dump());
}

TEST(ConfigTest, E2bLayersMatchTheSpecTable) {
  auto c = ParseGemma4Config(E2bConfig(), nullptr);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->num_layers, 35);
  EXPECT_EQ(c->vocab_size, 262144);
  EXPECT_EQ(c->hidden_size, 1536);
  for (const LayerConfig& l : c->layers) {
    const bool full = (l.index + 1) % 5 == 0;
    EXPECT_EQ(l.sliding(), !full) << l.index;
    EXPECT_EQ(l.head_dim, full ? 512 : 256) << l.index;
    EXPECT_EQ(l.n_heads, 8);
    EXPECT_EQ(l.n_kv_heads, 1);
    EXPECT_EQ(l.mlp_width, l.index >= 15 ? 12288 : 6144) << l.index;
    EXPECT_EQ(l.kv_source, l.index < 15 ? l.index : (full ? 14 : 13)) << l.index;
  }
  EXPECT_EQ(c->eos_ids, (std::vector<int>{1, 106}));
}

TEST(ConfigTest, ProportionalRopeRotatesOnlyTheFirstQuarterPairs) {
  auto c = ParseGemma4Config(E2bConfig(), nullptr);
  ASSERT_TRUE(c.ok());
  const std::vector<float> full = c->InvFreq(c->layers[4]);
  ASSERT_EQ(full.size(), 256u);
  EXPECT_FLOAT_EQ(full[0], 1.0f);
  // Exponent denominator is the full head dim 512, not the rotated width 128.
  EXPECT_FLOAT_EQ(full[63], static_cast<float>(std::pow(1e6, -2.0 * 63 / 512)));
  for (size_t j = 64; j < 256; ++j) EXPECT_EQ(full[j], 0.0f) << j;
  const std::vector<float> sliding = c->InvFreq(c->layers[0]);
  ASSERT_EQ(sliding.size(), 128u);
  EXPECT_FLOAT_EQ(sliding[127], static_cast<float>(std::pow(1e4, -2.0 * 127 / 256)));
}

TEST(ConfigTest, TextOnlyFormAndPerLayerConfigForm) {
  json text = E2bConfig()["text_config"];
  // The newer transformers form: per_layer_config replaces the flat global fields.
  text.erase("global_head_dim");
  text["per_layer_config"] = json::object();
  // Keys as transformers writes them: zero-padded to the widest index.
  for (int i = 4; i < 35; i += 5) {
    text["per_layer_config"][(i < 10 ? "0" : "") + std::to_string(i)] = {{"head_dim", 512}};
  }
  auto c = ParseGemma4Config(text, nullptr);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->model_type, "gemma4_text");
  EXPECT_EQ(c->layers[4].head_dim, 512);
  EXPECT_EQ(c->layers[34].head_dim, 512);
  EXPECT_EQ(c->layers[3].head_dim, 256);
}

TEST(ConfigTest, KEqVUsesGlobalKvHeadsOnFullLayers) {
  SyntheticOptions o;
  o.preset = "31b-like";
  auto c = ParseGemma4Config(json::parse(SyntheticConfig(o)->dump()), nullptr);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  for (const LayerConfig& l : c->layers) {
    EXPECT_EQ(l.has_v_proj, l.sliding());
    EXPECT_EQ(l.n_kv_heads, l.sliding() ? 4 : 2);
    EXPECT_FALSE(l.kv_shared());
  }
  EXPECT_EQ(c->ple_width, 0);
}

// make-model --preset 26b-a4b writes the released 26B-A4B text config (spec §1.2).
TEST(ConfigTest, Preset26bA4bHasTheReleasedShapes) {
  SyntheticOptions o;
  o.preset = "26b-a4b";
  auto c = ParseGemma4Config(json::parse(SyntheticConfig(o)->dump()), nullptr);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->vocab_size, 262144);
  EXPECT_EQ(c->hidden_size, 2816);
  EXPECT_EQ(c->num_layers, 30);
  EXPECT_EQ(c->intermediate_size, 2112);
  EXPECT_EQ(c->sliding_window, 1024);
  EXPECT_EQ(c->num_experts, 128);
  EXPECT_EQ(c->top_k_experts, 8);
  EXPECT_EQ(c->moe_intermediate_size, 704);
  EXPECT_EQ(c->ple_width, 0);
  EXPECT_EQ(c->num_kv_shared_layers, 0);
  int full = 0;
  for (const LayerConfig& l : c->layers) {
    EXPECT_EQ(l.n_heads, 16);
    EXPECT_EQ(l.n_kv_heads, l.sliding() ? 8 : 2);
    EXPECT_EQ(l.head_dim, l.sliding() ? 256 : 512);
    EXPECT_EQ(l.has_v_proj, l.sliding());  // attention_k_eq_v
    full += l.sliding() ? 0 : 1;
  }
  EXPECT_EQ(full, 5);  // (5S+1F) x 5
}

TEST(ConfigTest, DonorIsLastNonSharedLayerOfSameType) {
  using LT = LayerType;
  // S S F S S | S F S F : first shared = 5; donors: sliding -> 4, full -> 2.
  const std::vector<LT> t = {LT::kSliding, LT::kSliding, LT::kFull,    LT::kSliding, LT::kSliding,
                             LT::kSliding, LT::kFull,    LT::kSliding, LT::kFull};
  EXPECT_EQ(KvDonor(t, 4, 3), 3);
  EXPECT_EQ(KvDonor(t, 4, 5), 4);
  EXPECT_EQ(KvDonor(t, 4, 6), 2);
  EXPECT_EQ(KvDonor(t, 4, 8), 2);
  EXPECT_EQ(KvDonor(t, 0, 8), 8);
}

TEST(ConfigTest, EosIdsFromGenerationConfigToo) {
  json gen = {{"eos_token_id", {1, 106, 50}}};
  auto c = ParseGemma4Config(E2bConfig(), &gen);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->eos_ids, (std::vector<int>{1, 106, 50}));
}

TEST(ConfigTest, UnknownArchitectureIsRefused) {
  json cfg = {{"model_type", "llama"}, {"hidden_size", 64}};
  auto c = ParseGemma4Config(cfg, nullptr);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("unknown architecture"));
  EXPECT_THAT(c.status().message(), HasSubstr("llama"));
}

TEST(ConfigTest, MoeFieldsAreReadAndChecked) {
  json cfg = E2bConfig();
  json& t = cfg["text_config"];
  t["enable_moe_block"] = true;
  t["num_experts"] = 128;
  t["top_k_experts"] = 8;
  t["moe_intermediate_size"] = 704;
  auto c = ParseGemma4Config(cfg, nullptr);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->moe());
  EXPECT_EQ(c->num_experts, 128);
  EXPECT_EQ(c->top_k_experts, 8);
  EXPECT_EQ(c->moe_intermediate_size, 704);

  t["top_k_experts"] = 129;  // more than there are experts
  c = ParseGemma4Config(cfg, nullptr);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("top_k_experts"));
  EXPECT_THAT(c.status().message(), HasSubstr("129"));
  t.erase("top_k_experts");
  c = ParseGemma4Config(cfg, nullptr);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("text_config.top_k_experts"));
  t["enable_moe_block"] = false;  // the fields are ignored without the flag
  c = ParseGemma4Config(cfg, nullptr);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_FALSE(c->moe());
}

TEST(ConfigTest, MissingAndMistypedFieldsAreNamed) {
  json cfg = E2bConfig();
  cfg["text_config"].erase("hidden_size");
  auto c = ParseGemma4Config(cfg, nullptr, "x/config.json");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("x/config.json: text_config.hidden_size is missing"));

  cfg = E2bConfig();
  cfg["text_config"]["num_attention_heads"] = "eight";
  c = ParseGemma4Config(cfg, nullptr);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("num_attention_heads must be an integer"));

  cfg = E2bConfig();
  cfg["text_config"]["layer_types"][3] = "local";
  c = ParseGemma4Config(cfg, nullptr);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("layer_types[3]"));

  cfg = E2bConfig();
  cfg["text_config"]["rope_parameters"]["full_attention"]["rope_type"] = "yarn";
  c = ParseGemma4Config(cfg, nullptr);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("rope_type 'yarn'"));
}

TEST(ConfigTest, LastLayerIsForcedFullAsInTransformers) {
  json cfg = E2bConfig();
  cfg["text_config"]["layer_types"][34] = "sliding_attention";
  auto c = ParseGemma4Config(cfg, nullptr);
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->layers[34].sliding());
}

}  // namespace
}  // namespace g4
