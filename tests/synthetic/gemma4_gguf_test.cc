// `g4 make-model --format gguf`: the GGUF file of a seed holds the safetensors checkpoint's
// weights under llama.cpp's names, so Gemma4Model gives the same logits from either; quantized
// files use the documented tensor types and stay close to the float model.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "loader/gguf.h"
#include "model/gemma4/model.h"
#include "model/gemma4/tensors.h"
#include "synthetic/gemma4.h"

namespace g4 {
namespace {

namespace fs = std::filesystem;

fs::path TempCase(const std::string& name) {
  fs::path p = fs::path(::testing::TempDir()) / ("g4_synth_gguf_" + name);
  fs::remove_all(p);
  return p;
}

std::vector<float> Logits(const std::string& path) {
  auto m = Gemma4Model::Load(path);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  if (!m.ok()) return {};
  Backend be(BackendKind::kCpu, 2);
  const std::vector<int32_t> ids = {2, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 7, 3};
  auto l = (*m)->Forward(be, ids);
  EXPECT_TRUE(l.ok()) << l.status().ToString();
  return l.ok() ? *l : std::vector<float>{};
}

// ||a - b|| / ||b||.
double RelError(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(b[i]) * b[i];
  }
  return std::sqrt(num / den);
}

// Per element: |q - f| <= bound(kind) * max |f| over the element's block.
void ExpectWithinQuantError(const std::string& f32_path, const std::string& q_path) {
  auto f = Gemma4Model::Load(f32_path);
  auto q = Gemma4Model::Load(q_path);
  ASSERT_TRUE(f.ok() && q.ok());
  ModelWeights wf = (*f)->weights(), wq = (*q)->weights();
  const auto sf = ListTensors((*f)->config(), &wf), sq = ListTensors((*q)->config(), &wq);
  ASSERT_EQ(sf.size(), sq.size());
  int quantized = 0;
  for (size_t i = 0; i < sf.size(); ++i) {
    if (!sf[i].view || !sq[i].view) continue;
    const TensorView& a = *sf[i].view;
    const TensorView& b = *sq[i].view;
    ASSERT_EQ(a.shape, b.shape) << sf[i].name;
    if (!b.quantized()) {
      for (int64_t e = 0; e < a.numel(); ++e) ASSERT_EQ(a.at(e), b.at(e)) << sf[i].name;
      continue;
    }
    ++quantized;
    const QuantKind kind = b.quant.kind;
    const double rel = kind == QuantKind::kQ8_0   ? 0.5 / 127 + 1.0 / 1024
                       : kind == QuantKind::kQ4_0 ? 1.0 / 8 + 1.0 / 1024
                                                  : 1.0 / 16;  // Q6_K: ~a step of 1/31.5
    const int64_t elems = GgufBlockFormat(kind).elems;
    for (int64_t b0 = 0; b0 < a.numel(); b0 += elems) {
      double amax = 0;
      for (int64_t e = b0; e < b0 + elems; ++e) amax = std::max(amax, std::fabs(double(a.at(e))));
      for (int64_t e = b0; e < b0 + elems; ++e) {
        ASSERT_LE(std::fabs(double(b.at(e)) - a.at(e)), rel * amax + 1e-30)
            << sf[i].name << " (" << QuantKindName(kind) << ") element " << e;
      }
    }
  }
  EXPECT_GT(quantized, 50) << q_path;
}

void ExpectSameLogitsAsSafetensors(SyntheticOptions o, const std::string& name) {
  const fs::path dir = TempCase(name + "_st");
  const fs::path file = TempCase(name + ".gguf");
  o.dtype = DType::kF32;
  ASSERT_TRUE(WriteSyntheticCheckpoint(o, dir.string()).ok());
  const Status s = WriteSyntheticGguf(o, "f32", nullptr, file.string());
  ASSERT_TRUE(s.ok()) << s.ToString();
  const std::vector<float> a = Logits(dir.string()), b = Logits(file.string());
  ASSERT_EQ(a.size(), b.size());
  ASSERT_FALSE(a.empty());
  float max_abs = 0, max_diff = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    max_abs = std::max(max_abs, std::fabs(a[i]));
    max_diff = std::max(max_diff, std::fabs(a[i] - b[i]));
  }
  EXPECT_LE(max_diff, 1e-5f * max_abs) << name;
  EXPECT_GT(max_abs, 0.0f);
  fs::remove_all(dir);
  fs::remove(file);
}

TEST(SyntheticGgufTest, F32FileGivesTheSafetensorsLogits) {
  SyntheticOptions o;
  o.preset = "tiny";
  o.seed = 5;
  ExpectSameLogitsAsSafetensors(o, "tiny");
}

TEST(SyntheticGgufTest, F32FileGivesTheSafetensorsLogitsWithKEqVAndNoPle) {
  SyntheticOptions o;
  o.preset = "31b-like";
  o.layers = 6;
  o.seed = 9;
  ExpectSameLogitsAsSafetensors(o, "31b");
}

TEST(SyntheticGgufTest, QuantizedFilesUseTheQatLayoutAndStayClose) {
  SyntheticOptions o;
  o.preset = "tiny";
  o.hidden = 256;  // a K-quant block per embedding row, so token_embd can be Q6_K
  o.ple_dim = 16;   // per_layer_token_embd rows of 10 x 16 = 160: Q8_0 blocks, not K blocks
  o.seed = 3;
  o.dtype = DType::kF32;
  const fs::path f32 = TempCase("f32.gguf"), q8 = TempCase("q8.gguf"), q4 = TempCase("q4.gguf");
  ASSERT_TRUE(WriteSyntheticGguf(o, "f32", nullptr, f32.string()).ok());
  ASSERT_TRUE(WriteSyntheticGguf(o, "q8_0", nullptr, q8.string()).ok());
  const Status s = WriteSyntheticGguf(o, "q4_0", nullptr, q4.string());
  ASSERT_TRUE(s.ok()) << s.ToString();

  auto file = GgufFile::Open(q4.string());
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  auto type = [&](const char* name) {
    const GgufTensorInfo* t = (*file)->Find(name);
    return t ? std::string(t->type.name) : std::string("missing");
  };
  EXPECT_EQ(type("token_embd.weight"), "Q6_K");
  EXPECT_EQ(type("per_layer_token_embd.weight"), "Q8_0");
  EXPECT_EQ(type("blk.0.inp_gate.weight"), "Q4_0");
  EXPECT_EQ(type("blk.0.attn_q.weight"), "Q4_0");
  EXPECT_EQ(type("blk.9.ffn_down.weight"), "Q4_0");
  EXPECT_EQ(type("blk.0.proj.weight"), "F32");  // K = 16: no block fits
  EXPECT_EQ(type("blk.0.attn_norm.weight"), "F32");
  EXPECT_EQ(type("rope_freqs.weight"), "F32");
  EXPECT_EQ(*(*file)->GetInt("general.file_type"), 2);
  EXPECT_EQ(*(*file)->GetString("tokenizer.ggml.model"), "gemma4");
  EXPECT_EQ((*file)->FindValue("tokenizer.ggml.tokens")->count, 512u);

  // Every element of every quantized tensor is within its block's quantization step of the f32
  // file's value (so the writer put the right rows in the right blocks).
  ExpectWithinQuantError(f32.string(), q8.string());
  ExpectWithinQuantError(f32.string(), q4.string());
  // End to end through the quantized kernels (a random 10-layer network amplifies weight error;
  // measured: q8_0 6.7 %, q4_0 63 % relative L2 of the logits).
  const std::vector<float> ref = Logits(f32.string());
  const double e8 = RelError(Logits(q8.string()), ref);
  const double e4 = RelError(Logits(q4.string()), ref);
  EXPECT_LT(e8, 0.1);
  EXPECT_LT(e8, e4);
  fs::remove(f32);
  fs::remove(q8);
  fs::remove(q4);
}

TEST(SyntheticGgufTest, RejectsUnknownQuant) {
  SyntheticOptions o;
  const Status s = WriteSyntheticGguf(o, "q3_k", nullptr, TempCase("bad.gguf").string());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("q3_k"), std::string::npos);
}

}  // namespace
}  // namespace g4
