// Hostile-input limits of ParseModelConfig (tests/fuzz/README.md): counts that size per-layer
// tables are capped before anything is allocated, and products of config fields never overflow.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "model/gemma4/config.h"

namespace g4 {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;

json TextConfig() {
  return json{{"model_type", "gemma4_text"}, {"vocab_size", 64},        {"hidden_size", 8},
              {"num_hidden_layers", 2},      {"num_attention_heads", 2}, {"num_key_value_heads", 1},
              {"head_dim", 4},               {"intermediate_size", 16},  {"sliding_window", 8}};
}

TEST(ConfigFuzzRegressionTest, BaseConfigParses) {
  auto c = ParseGemma4Config(TextConfig(), nullptr);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->layers.size(), 2u);
}

// num_hidden_layers = 2^30 passed the integer range check and made ParseLayerTypes push a
// billion entries (gigabytes) from a 200-byte file.
TEST(ConfigFuzzRegressionTest, LayerCountIsCapped) {
  json cfg = TextConfig();
  cfg["num_hidden_layers"] = 1 << 30;
  auto c = ParseGemma4Config(cfg, nullptr, "cfg.json");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(c.status().message(), HasSubstr("cfg.json: num_hidden_layers = 1073741824"));
  EXPECT_THAT(c.status().message(), HasSubstr("limit of 1024"));

  cfg["num_hidden_layers"] = kMaxModelLayers;
  EXPECT_TRUE(ParseGemma4Config(cfg, nullptr).ok());
}

// intermediate_size = 2^30 with a double-wide MLP on KV-shared layers overflowed int
// (UBSan: signed integer overflow in BuildLayers).
TEST(ConfigFuzzRegressionTest, DoubleWideMlpWidthDoesNotOverflow) {
  json cfg = TextConfig();
  cfg["num_hidden_layers"] = 4;
  cfg["layer_types"] = {"sliding_attention", "full_attention", "sliding_attention",
                        "full_attention"};
  cfg["num_kv_shared_layers"] = 1;
  cfg["use_double_wide_mlp"] = true;
  cfg["intermediate_size"] = 1 << 30;
  auto c = ParseGemma4Config(cfg, nullptr, "cfg.json");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("intermediate_size = 1073741824 is out of range"));

  cfg["intermediate_size"] = (1 << 30) - 1;
  auto ok = ParseGemma4Config(cfg, nullptr);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->layers.back().mlp_width, 2 * ((1 << 30) - 1));
}

}  // namespace
}  // namespace g4
