// Bad checkpoints and bad inputs through the whole load path: each gives a clear error that
// names the file, tensor or field — never a crash, never garbage logits.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "loader/safetensors.h"
#include "loader/safetensors_writer.h"
#include "model/gemma4/model.h"
#include "model/model_test_util.h"
#include "synthetic/gemma4.h"

namespace g4 {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class LoadErrorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("g4_load_errors_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    SyntheticOptions o;
    o.preset = "tiny";
    o.dtype = DType::kF32;
    o.seed = 7;
    ASSERT_TRUE(WriteSyntheticCheckpoint(o, dir_.string()).ok());
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Rewrites model.safetensors through `edit`, which may drop (return false) or change a tensor.
  void Rewrite(const std::function<bool(TensorSpec&)>& edit) {
    model_test::RewriteSafetensors(dir_, edit);
  }

  Status LoadStatus() { return Gemma4Model::Load(dir_.string()).status(); }

  fs::path dir_;
};

TEST_F(LoadErrorsTest, SyntheticCheckpointLoadsAndRuns) {
  auto m = Gemma4Model::Load(dir_.string());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  Backend be(BackendKind::kCpu, 2);
  auto logits = (*m)->Forward(be, std::vector<int32_t>{2, 5, 9});
  ASSERT_TRUE(logits.ok());
  for (float x : *logits) ASSERT_TRUE(std::isfinite(x));
}

TEST_F(LoadErrorsTest, MissingTensorIsNamed) {
  Rewrite([](TensorSpec& s) { return s.name != "model.language_model.layers.2.mlp.up_proj.weight"; });
  const Status s = LoadStatus();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("missing tensor model.language_model.layers.2.mlp.up_proj.weight"));
}

TEST_F(LoadErrorsTest, WrongShapeNamesExpectedAndFound) {
  Rewrite([](TensorSpec& s) {
    if (s.name == "model.language_model.layers.1.self_attn.q_proj.weight") s.shape = {60, 64};
    return true;
  });
  const Status s = LoadStatus();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("layers.1.self_attn.q_proj.weight"));
  EXPECT_THAT(s.message(), HasSubstr("has shape [60, 64]; expected [64, 64]"));
}

TEST_F(LoadErrorsTest, NonFloatWeightIsRefused) {
  Rewrite([](TensorSpec& s) {
    if (s.name == "model.language_model.norm.weight") s.dtype = DType::kI32;
    return true;
  });
  const Status s = LoadStatus();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("norm.weight"));
  EXPECT_THAT(s.message(), HasSubstr("dtype I32"));
}

TEST_F(LoadErrorsTest, UnusedKvTensorsOfSharedLayersMayBeAbsent) {
  // tiny: 10 layers, the last 4 KV-shared; their k/v are never read.
  Rewrite([](TensorSpec& s) { return s.name.find("layers.8.self_attn.k_proj") == std::string::npos; });
  EXPECT_TRUE(LoadStatus().ok()) << LoadStatus().ToString();
}

TEST_F(LoadErrorsTest, TruncatedSafetensorsNamesTheFile) {
  const fs::path path = dir_ / "model.safetensors";
  fs::resize_file(path, fs::file_size(path) - 100);
  const Status s = LoadStatus();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("model.safetensors"));
}

TEST_F(LoadErrorsTest, MalformedConfigNamesTheFile) {
  std::ofstream(dir_ / "config.json") << "{\"model_type\": \"gemma4\", ";
  const Status s = LoadStatus();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("config.json"));
  EXPECT_THAT(s.message(), HasSubstr("malformed JSON"));
}

TEST_F(LoadErrorsTest, MissingDirectoryIsNotFound) {
  auto m = Gemma4Model::Load((dir_ / "nope").string());
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kNotFound);
}

TEST_F(LoadErrorsTest, BadTokenIdsAreRefusedBeforeAnyCompute) {
  auto m = Gemma4Model::Load(dir_.string());
  ASSERT_TRUE(m.ok());
  Backend be(BackendKind::kRef, 1);
  auto r = (*m)->Forward(be, std::vector<int32_t>{2, 512});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("token id 512 at position 1 is outside the vocabulary of 512"));
  r = (*m)->Forward(be, std::vector<int32_t>{});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("empty input"));
}

TEST_F(LoadErrorsTest, PromptPastTheContextIsRefused) {
  std::ifstream in(dir_ / "config.json");
  auto cfg = nlohmann::json::parse(in);
  cfg["text_config"]["max_position_embeddings"] = 4;
  std::ofstream(dir_ / "config.json") << cfg.dump();
  auto m = Gemma4Model::Load(dir_.string());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  Backend be(BackendKind::kRef, 1);
  auto r = (*m)->Forward(be, std::vector<int32_t>{2, 3, 4, 5, 6});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("longer than the context"));
}

}  // namespace
}  // namespace g4
