// ModelConfigFromGguf on small files written with the C++ GGUF writer: the per-layer expansion
// of llama.cpp's keys, RoPE from rope_freqs, and the errors for metadata that does not fit.
// (The end-to-end GGUF model tests on gguf-py files are in gguf_model_test.cc.)
#include "model/gemma4/gguf_config.h"

#include <cmath>
#include <filesystem>
#include <vector>

#include <gtest/gtest.h>

#include "common/temp_path.h"
#include "loader/gguf_writer.h"

namespace g4 {
namespace {

namespace fs = std::filesystem;

// A 6-layer gemma4 shaped like E2B: full layers 2 and 5, layers 4-5 KV-shared, vocab 64, H 32.
struct Spec {
  std::string arch = "gemma4";
  uint32_t layers = 6;
  std::vector<int32_t> kv = {1, 1, 2, 1, 1, 2};
  int tokens = 64;        // length of tokenizer.ggml.tokens (0: none)
  int rotated = 4;        // leading rope_freqs entries that rotate (of 16)
  bool rope_freqs = true;
};

class GgufConfigTest : public ::testing::Test {
 protected:
  StatusOr<ModelConfig> Load(const Spec& s) {
    GgufMetadata m;
    m.SetString("general.architecture", s.arch);
    const std::string a = s.arch + ".";
    m.SetU32(a + "block_count", s.layers);
    m.SetU32(a + "embedding_length", 32);
    m.SetI32Array(a + "feed_forward_length", std::vector<int32_t>{64, 64, 64, 64, 128, 128});
    m.SetU32(a + "attention.head_count", 2);
    m.SetI32Array(a + "attention.head_count_kv", s.kv);
    m.SetU32(a + "attention.key_length", 32);
    m.SetU32(a + "attention.key_length_swa", 16);
    m.SetF32(a + "rope.freq_base", 1e6f);
    m.SetF32(a + "rope.freq_base_swa", 1e4f);
    m.SetU32(a + "attention.sliding_window", 8);
    m.SetBoolArray(a + "attention.sliding_window_pattern", {true, true, false, true, true, false});
    m.SetU32(a + "attention.shared_kv_layers", 2);
    m.SetF32(a + "attention.layer_norm_rms_epsilon", 1e-6f);
    m.SetF32(a + "final_logit_softcapping", 30.0f);
    if (s.tokens > 0) {
      std::vector<std::string> toks(static_cast<size_t>(s.tokens), "x");
      toks[1] = "<eos>";
      toks[9] = "<turn|>";
      m.SetStringArray("tokenizer.ggml.tokens", toks);
    }
    std::vector<GgufTensorSpec> specs = {{"token_embd.weight", {64, 32}, 0}};
    if (s.rope_freqs) specs.push_back({"rope_freqs.weight", {16}, 0});
    const std::string path = testing::ProcessTempPath("g4_gguf_config.gguf").string();
    const int rotated = s.rotated;
    Status w = WriteGguf(path, m, specs, [&specs, rotated](size_t i, ByteSink& sink) {
      std::vector<float> v(static_cast<size_t>(specs[i].shape[0] * (i == 0 ? 32 : 1)), 0.25f);
      if (i == 1) {
        for (size_t j = 0; j < v.size(); ++j) v[j] = static_cast<int>(j) < rotated ? 1.0f : 1e30f;
      }
      return sink.Write(v.data(), v.size() * 4);
    });
    if (!w.ok()) return w;
    file_.reset();
    auto f = GgufFile::Open(path);
    if (!f.ok()) return f.status();
    file_ = std::move(*f);
    return Gemma4ConfigFromGguf(*file_);
  }

  std::unique_ptr<GgufFile> file_;
};

TEST_F(GgufConfigTest, ExpandsLayers) {
  auto c = Load(Spec{});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->vocab_size, 64);
  EXPECT_EQ(c->hidden_size, 32);
  EXPECT_EQ(c->num_layers, 6);
  EXPECT_EQ(c->eos_ids, (std::vector<int>{1, 9}));  // eos + <turn|>
  ASSERT_EQ(c->layers.size(), 6u);
  const int head_dims[] = {16, 16, 32, 16, 16, 32};
  const int kv_heads[] = {1, 1, 2, 1, 1, 2};
  const int widths[] = {64, 64, 64, 64, 128, 128};
  const int donors[] = {0, 1, 2, 3, 3, 2};  // shared sliding -> 3, shared full -> 2
  for (int i = 0; i < 6; ++i) {
    const LayerConfig& l = c->layers[static_cast<size_t>(i)];
    EXPECT_EQ(l.head_dim, head_dims[i]) << i;
    EXPECT_EQ(l.n_kv_heads, kv_heads[i]) << i;
    EXPECT_EQ(l.mlp_width, widths[i]) << i;
    EXPECT_EQ(l.kv_source, donors[i]) << i;
    EXPECT_EQ(l.sliding(), i != 2 && i != 5) << i;
  }
  EXPECT_DOUBLE_EQ(c->final_logit_softcap, 30.0);
}

TEST_F(GgufConfigTest, RopeFreqsGiveProportionalRope) {
  auto c = Load(Spec{});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const std::vector<float> full = c->InvFreq(c->layers[2]);  // head dim 32: 16 pairs, 4 rotate
  ASSERT_EQ(full.size(), 16u);
  for (int j = 0; j < 16; ++j) {
    const float want = j < 4 ? static_cast<float>(std::pow(1e6, -2.0 * j / 32)) : 0.0f;
    EXPECT_FLOAT_EQ(full[static_cast<size_t>(j)], want) << j;
  }
  const std::vector<float> sliding = c->InvFreq(c->layers[0]);  // plain over all 8 pairs
  for (int j = 0; j < 8; ++j) {
    EXPECT_FLOAT_EQ(sliding[static_cast<size_t>(j)],
                    static_cast<float>(std::pow(1e4, -2.0 * j / 16))) << j;
  }
  Spec none;
  none.rope_freqs = false;
  auto plain = Load(none);
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_GT(plain->InvFreq(plain->layers[2])[15], 0.0f);  // no rope_freqs: every pair rotates
}

TEST_F(GgufConfigTest, Errors) {
  Spec arch;
  arch.arch = "llama";
  auto a = Load(arch);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(a.status().message().find("general.architecture is 'llama'"), std::string::npos);

  Spec deep;
  deep.layers = 1u << 30;
  auto d = Load(deep);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("block_count"), std::string::npos) << d.status().message();

  Spec kv;
  kv.kv = {1, 1, 2};
  auto k = Load(kv);
  ASSERT_FALSE(k.ok());
  EXPECT_NE(k.status().message().find("'gemma4.attention.head_count_kv' has 3 entries"),
            std::string::npos) << k.status().message();

  Spec toks;
  toks.tokens = 63;
  auto t = Load(toks);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("63 tokens but tensor 'token_embd.weight' has 64 rows"),
            std::string::npos) << t.status().message();

  Spec gap;
  gap.rotated = 0;  // no entry rotates: allowed (a NoPE full layer)
  EXPECT_TRUE(Load(gap).ok());
}

}  // namespace
}  // namespace g4
