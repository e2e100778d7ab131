// Gemma 3 configs as the released checkpoints write them (config.json of the 270M text model,
// the multimodal 4B / 27B whose text_config leaves most fields at transformers' defaults,
// transformers 5's rope_parameters form) and as llama.cpp's GGUF metadata states them, expanded
// into the shared ModelConfig. Spec: ../shared/spec/gemma3.md.
#include "model/gemma3/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "common/real_model.h"
#include "common/temp_path.h"
#include "loader/gguf.h"
#include "loader/gguf_writer.h"

namespace g4 {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

// google/gemma-3-270m's config.json (transformers 4.55 form).
json Config270m() {
  json layer_types = json::array();
  for (int i = 0; i < 18; ++i) {
    layer_types.push_back(i % 6 == 5 ? "full_attention" : "sliding_attention");
  }
  return json{{"architectures", {"Gemma3ForCausalLM"}},
              {"attn_logit_softcapping", nullptr},
              {"bos_token_id", 2},
              {"eos_token_id", 1},
              {"final_logit_softcapping", nullptr},
              {"head_dim", 256},
              {"hidden_activation", "gelu_pytorch_tanh"},
              {"hidden_size", 640},
              {"intermediate_size", 2048},
              {"layer_types", layer_types},
              {"max_position_embeddings", 32768},
              {"model_type", "gemma3_text"},
              {"num_attention_heads", 4},
              {"num_hidden_layers", 18},
              {"num_key_value_heads", 1},
              {"pad_token_id", 0},
              {"query_pre_attn_scalar", 256},
              {"rms_norm_eps", 1e-06},
              {"rope_local_base_freq", 10000.0},
              {"rope_scaling", nullptr},
              {"rope_theta", 1000000.0},
              {"sliding_window", 512},
              {"use_bidirectional_attention", false},
              {"vocab_size", 262144}};
}

// google/gemma-3-4b-it's config.json: the text_config names only what differs from defaults.
json Config4b() {
  return json{{"architectures", {"Gemma3ForConditionalGeneration"}},
              {"eos_token_id", {1, 106}},
              {"model_type", "gemma3"},
              {"text_config",
               {{"hidden_size", 2560},
                {"intermediate_size", 10240},
                {"model_type", "gemma3_text"},
                {"num_hidden_layers", 34},
                {"rope_scaling", {{"factor", 8.0}, {"rope_type", "linear"}}},
                {"sliding_window", 1024}}},
              {"vision_config", {{"model_type", "siglip_vision_model"}}}};
}

TEST(Gemma3ConfigTest, The270mTextConfig) {
  auto c = ParseGemma3Config(Config270m(), nullptr);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->num_layers, 18);
  EXPECT_EQ(c->vocab_size, 262144);
  EXPECT_EQ(c->sliding_window, 512);
  EXPECT_DOUBLE_EQ(c->attention_scale, 1.0 / 16);  // 256^-0.5
  EXPECT_FALSE(c->v_norm);
  EXPECT_EQ(c->final_logit_softcap, 0.0);
  EXPECT_DOUBLE_EQ(c->rope_sliding.theta, 1e4);
  EXPECT_DOUBLE_EQ(c->rope_full.theta, 1e6);
  EXPECT_DOUBLE_EQ(c->rope_full.factor, 1.0);
  EXPECT_EQ(c->eos_ids, std::vector<int>({1}));
  for (const LayerConfig& l : c->layers) {
    EXPECT_EQ(l.sliding(), l.index % 6 < 5) << l.index;
    EXPECT_EQ(l.head_dim, 256);
    EXPECT_EQ(l.n_heads, 4);
    EXPECT_EQ(l.n_kv_heads, 1);
    EXPECT_FALSE(l.kv_shared());
    EXPECT_TRUE(l.has_v_proj);
  }
  const std::vector<KvLayout> kv = KvLayouts(*c);
  ASSERT_EQ(kv.size(), 18u);
  EXPECT_EQ(kv[0].window, 512);
  EXPECT_EQ(kv[5].window, 0);
  EXPECT_FALSE(kv[5].sliding());
}

TEST(Gemma3ConfigTest, MultimodalTextConfigTakesTransformersDefaults) {
  const json gen = {{"eos_token_id", {1, 106}}};
  auto c = ParseGemma3Config(Config4b(), &gen, "4b/config.json");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->model_type, "gemma3");
  EXPECT_EQ(c->vocab_size, 262208);  // the default: text + image soft tokens
  EXPECT_EQ(c->hidden_size, 2560);
  EXPECT_EQ(c->num_heads, 8);
  EXPECT_EQ(c->num_kv_heads, 4);
  EXPECT_EQ(c->head_dim, 256);
  EXPECT_EQ(c->sliding_window, 1024);
  EXPECT_EQ(c->max_position_embeddings, 131072);
  // Linear scaling, factor 8, on full layers only.
  EXPECT_DOUBLE_EQ(c->rope_full.factor, 8.0);
  EXPECT_DOUBLE_EQ(c->rope_sliding.factor, 1.0);
  const LayerConfig& full = c->layers[5];
  ASSERT_FALSE(full.sliding());
  EXPECT_FLOAT_EQ(c->InvFreq(full)[1], static_cast<float>(std::pow(1e6, -2.0 / 256) / 8));
  EXPECT_FLOAT_EQ(c->InvFreq(c->layers[0])[1], static_cast<float>(std::pow(1e4, -2.0 / 256)));
  // Layers 0-4 sliding, 5 full, ..., 33 = 5 * 6 + 3 sliding: no forced last full layer.
  EXPECT_TRUE(c->layers[33].sliding());
  EXPECT_EQ(c->eos_ids, std::vector<int>({1, 106}));
}

TEST(Gemma3ConfigTest, The27bScalesQueriesByHiddenOverHeads) {
  json cfg = Config4b();
  cfg["text_config"]["head_dim"] = 128;
  cfg["text_config"]["hidden_size"] = 5376;
  cfg["text_config"]["num_attention_heads"] = 32;
  cfg["text_config"]["num_key_value_heads"] = 16;
  cfg["text_config"]["num_hidden_layers"] = 62;
  cfg["text_config"]["query_pre_attn_scalar"] = 168;
  auto c = ParseGemma3Config(cfg, nullptr);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_DOUBLE_EQ(c->attention_scale, 1.0 / std::sqrt(168.0));
}

TEST(Gemma3ConfigTest, TransformersFiveRopeParameters) {
  json cfg = Config270m();
  cfg.erase("rope_theta");
  cfg.erase("rope_local_base_freq");
  cfg["rope_parameters"] = {
      {"full_attention", {{"rope_type", "linear"}, {"factor", 4.0}, {"rope_theta", 5e5}}},
      {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 2e4}}}};
  auto c = ParseGemma3Config(cfg, nullptr);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_DOUBLE_EQ(c->rope_full.theta, 5e5);
  EXPECT_DOUBLE_EQ(c->rope_full.factor, 4.0);
  EXPECT_DOUBLE_EQ(c->rope_sliding.theta, 2e4);
  EXPECT_DOUBLE_EQ(c->rope_sliding.factor, 1.0);
}

TEST(Gemma3ConfigTest, WhatG4DoesNotRunIsRefusedByName) {
  json cfg = Config270m();
  cfg["attn_logit_softcapping"] = 50.0;
  auto c = ParseGemma3Config(cfg, nullptr, "x/config.json");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kUnimplemented);
  EXPECT_THAT(c.status().message(), HasSubstr("x/config.json: attn_logit_softcapping"));

  cfg = Config270m();
  cfg["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 2.0}};
  c = ParseGemma3Config(cfg, nullptr);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("rope_scaling type 'yarn'"));

  cfg = Config270m();
  cfg["use_bidirectional_attention"] = true;  // EmbeddingGemma
  c = ParseGemma3Config(cfg, nullptr);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("use_bidirectional_attention"));

  cfg = Config4b();
  cfg.erase("text_config");
  c = ParseGemma3Config(cfg, nullptr, "m/config.json");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("m/config.json: model_type gemma3 needs a text_config"));

  cfg = Config270m();
  cfg["num_attention_heads"] = 3;  // not a multiple of 2 KV heads
  cfg["num_key_value_heads"] = 2;
  c = ParseGemma3Config(cfg, nullptr, "h/config.json");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("h/config.json: layer 0: 3 query heads"));
}

// llama.cpp's gemma3 keys beyond what the 270M file has: linear RoPE scaling (4B+) on full
// layers only, the 27B's query scale (62 layers: hidden / heads), and named errors.
StatusOr<ModelConfig> WriteAndRead(int layers, bool scaling, const std::string& scaling_type,
                                   std::unique_ptr<GgufFile>* keep) {
  GgufMetadata m;
  m.SetString("general.architecture", "gemma3");
  m.SetU32("gemma3.block_count", static_cast<uint32_t>(layers));
  m.SetU32("gemma3.embedding_length", 64);
  m.SetU32("gemma3.feed_forward_length", 96);
  m.SetU32("gemma3.attention.head_count", 4);
  m.SetU32("gemma3.attention.head_count_kv", 2);
  m.SetU32("gemma3.attention.key_length", 32);
  m.SetU32("gemma3.attention.value_length", 32);
  m.SetU32("gemma3.attention.sliding_window", 16);
  m.SetF32("gemma3.rope.freq_base", 1e6f);
  m.SetU32("gemma3.context_length", 4096);
  if (scaling) {
    m.SetString("gemma3.rope.scaling.type", scaling_type);
    m.SetF32("gemma3.rope.scaling.factor", 8.0f);
  }
  const std::vector<GgufTensorSpec> specs = {{"token_embd.weight", {100, 64}, 0}};
  const std::string path = testing::ProcessTempPath("g4_gemma3_meta.gguf").string();
  G4_RETURN_IF_ERROR(WriteGguf(path, m, specs, [](size_t, ByteSink& sink) {
    const std::vector<float> v(100 * 64, 0.5f);
    return sink.Write(v.data(), v.size() * 4);
  }));
  G4_ASSIGN_OR_RETURN(*keep, GgufFile::Open(path));
  return Gemma3ConfigFromGguf(**keep);
}

TEST(Gemma3ConfigTest, GgufRopeScalingAndQueryScale) {
  std::unique_ptr<GgufFile> f;
  auto c = WriteAndRead(12, /*scaling=*/true, "linear", &f);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_DOUBLE_EQ(c->rope_full.factor, 8.0);
  EXPECT_DOUBLE_EQ(c->rope_sliding.factor, 1.0);
  EXPECT_DOUBLE_EQ(c->rope_sliding.theta, 1e4);  // llama.cpp's fixed sliding theta
  EXPECT_DOUBLE_EQ(c->attention_scale, 1.0 / std::sqrt(32.0));  // key_length
  EXPECT_EQ(c->vocab_size, 100);
  EXPECT_EQ(c->eos_ids, std::vector<int>({1}));
  for (const LayerConfig& l : c->layers) EXPECT_EQ(l.sliding(), l.index % 6 < 5) << l.index;

  c = WriteAndRead(62, /*scaling=*/false, "", &f);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_DOUBLE_EQ(c->attention_scale, 1.0 / std::sqrt(64.0 / 4));  // the 27B: hidden / heads

  c = WriteAndRead(12, /*scaling=*/true, "yarn", &f);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kUnimplemented);
  EXPECT_THAT(c.status().message(), HasSubstr("gemma3.rope.scaling.type 'yarn'"));
  EXPECT_THAT(c.status().message(), HasSubstr("g4_gemma3_meta"));  // the file is named
}

// The real checkpoint's metadata (../shared/spec/gemma3.md), when the file is on this machine.
TEST(Gemma3ConfigTest, RealGgufMetadata) {
  const std::string path = testing::RealGemma3Path();
  G4_REQUIRE_FILE(path, "scripts/real_model.sh assembles it; scripts/setup.sh runs that");
  auto f = GgufFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  auto c = Gemma3ConfigFromGguf(**f);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->num_layers, 18);
  EXPECT_EQ(c->hidden_size, 640);
  EXPECT_EQ(c->intermediate_size, 2048);
  EXPECT_EQ(c->num_heads, 4);
  EXPECT_EQ(c->num_kv_heads, 1);
  EXPECT_EQ(c->head_dim, 256);
  EXPECT_EQ(c->sliding_window, 512);
  EXPECT_EQ(c->vocab_size, 262144);
  EXPECT_EQ(c->max_position_embeddings, 32768);
  EXPECT_DOUBLE_EQ(c->attention_scale, 1.0 / 16);
  EXPECT_DOUBLE_EQ(c->rope_sliding.theta, 1e4);
  EXPECT_DOUBLE_EQ(c->rope_full.theta, 1e6);
  EXPECT_EQ(c->bos_id, 2);
  EXPECT_EQ(c->eos_ids, std::vector<int>({1, 106}));  // <eos>, <end_of_turn>
  for (const LayerConfig& l : c->layers) EXPECT_EQ(l.sliding(), l.index % 6 < 5) << l.index;
}

}  // namespace
}  // namespace g4
