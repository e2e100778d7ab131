// ParseQuantizationConfig (loader/compressed_tensors.h) against ../shared/spec/formats.md §1.1:
// the W4A16 export's config parses to symmetric int4 group 32 with its ignore list; a config
// without quantization_config is float; every unsupported variant is refused with a message
// naming the field (asymmetric, act-order, other bit widths, other formats and methods,
// quantized activations), never an exception.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "loader/compressed_tensors.h"

namespace g4 {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;

// A config.json as the released -qat-w4a16-ct exports have it (the fields g4 reads).
json W4A16Config() {
  json c;
  c["model_type"] = "gemma4";
  c["quantization_config"] = json::parse(
      MakeW4A16QuantizationConfig(32, {"lm_head", "re:.*vision_tower.*"}).dump());
  return c;
}

TEST(CompressedTensorsConfig, ParsesTheW4A16Export) {
  auto q = ParseQuantizationConfig(W4A16Config());
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  ASSERT_TRUE(q->has_value());
  EXPECT_EQ((*q)->num_bits, 4);
  EXPECT_FALSE((*q)->per_channel);
  EXPECT_EQ((*q)->group_size, 32);
  EXPECT_EQ((*q)->GroupSizeFor(1536), 32);
  EXPECT_THAT((*q)->ignore, ::testing::ElementsAre("lm_head", "re:.*vision_tower.*"));
}

TEST(CompressedTensorsConfig, NoQuantizationConfigMeansFloat) {
  json c;
  c["model_type"] = "gemma4";
  auto q = ParseQuantizationConfig(c);
  ASSERT_TRUE(q.ok());
  EXPECT_FALSE(q->has_value());
  c["quantization_config"] = nullptr;
  q = ParseQuantizationConfig(c);
  ASSERT_TRUE(q.ok());
  EXPECT_FALSE(q->has_value());
}

TEST(CompressedTensorsConfig, ChannelStrategyIsOneGroupPerRow) {
  json c = W4A16Config();
  json& w = c["quantization_config"]["config_groups"]["group_0"]["weights"];
  w["strategy"] = "channel";
  w["group_size"] = nullptr;
  auto q = ParseQuantizationConfig(c);
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_TRUE((*q)->per_channel);
  EXPECT_EQ((*q)->GroupSizeFor(6144), 6144);
}

// Each edit of the export's config, and the words its error must contain.
struct BadCase {
  const char* what;
  void (*edit)(json& q);
  const char* message;
};

json& Weights(json& q) { return q["config_groups"]["group_0"]["weights"]; }

const BadCase kBadCases[] = {
    {"asymmetric", [](json& q) { Weights(q)["symmetric"] = false; },
     "quantization_config.config_groups.group_0.weights.symmetric is false: asymmetric"},
    {"act-order", [](json& q) { Weights(q)["actorder"] = "group"; },
     "weights.actorder = \"group\": act-order (g_idx) checkpoints are not supported"},
    {"8-bit", [](json& q) { Weights(q)["num_bits"] = 8; },
     "weights.num_bits = 8: only 4-bit weights are supported"},
    {"float type", [](json& q) { Weights(q)["type"] = "float"; }, "weights.type 'float'"},
    {"tensor strategy", [](json& q) { Weights(q)["strategy"] = "tensor"; },
     "weights.strategy 'tensor' is not supported"},
    {"bad group", [](json& q) { Weights(q)["group_size"] = 0; },
     "weights.group_size must be a positive integer"},
    {"other format", [](json& q) { q["format"] = "int-quantized"; },
     "quantization_config.format 'int-quantized' is not supported"},
    {"other method", [](json& q) { q["quant_method"] = "gptq"; },
     "quantization_config.quant_method 'gptq' is not supported"},
    {"activations", [](json& q) { q["config_groups"]["group_0"]["input_activations"] = {{"num_bits", 8}}; },
     "group_0.input_activations is set: quantized activations"},
    {"kv cache", [](json& q) { q["kv_cache_scheme"] = {{"num_bits", 8}}; },
     "quantization_config.kv_cache_scheme is set"},
    {"no groups", [](json& q) { q.erase("config_groups"); },
     "quantization_config.config_groups is missing"},
    {"two schemes",
     [](json& q) {
       q["config_groups"]["group_1"] = q["config_groups"]["group_0"];
       Weights(q)["group_size"] = 128;
     },
     "differs from an earlier group"},
    {"symmetric wrong type", [](json& q) { Weights(q)["symmetric"] = "yes"; },
     "weights.symmetric is missing or not true/false"},
    {"ignore not a list", [](json& q) { q["ignore"] = "lm_head"; },
     "quantization_config.ignore must be a list"},
};

TEST(CompressedTensorsConfig, RefusesUnsupportedVariantsNamingTheField) {
  for (const BadCase& bad : kBadCases) {
    SCOPED_TRACE(bad.what);
    json c = W4A16Config();
    bad.edit(c["quantization_config"]);
    auto q = ParseQuantizationConfig(c, "dir/config.json");
    ASSERT_FALSE(q.ok());
    EXPECT_THAT(q.status().message(), HasSubstr(bad.message));
    EXPECT_THAT(q.status().message(), HasSubstr("dir/config.json"));
  }
}

}  // namespace
}  // namespace g4
