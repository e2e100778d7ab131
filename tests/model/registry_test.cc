// The registry picks the model of a checkpoint from what it declares: config.json's model_type
// (or, in an old config, its architectures) and GGUF general.architecture; anything else is
// refused with the declared name and the list of what g4 runs.
#include "model/registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/temp_path.h"
#include "synthetic/gemma4.h"

namespace g4 {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

void WriteConfig(const fs::path& dir, const std::string& text) {
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << text;
}

TEST(RegistryTest, EveryArchitectureIsFoundByItsNames) {
  const fs::path dir = testing::ProcessTempPath("g4_registry_gemma4");
  SyntheticOptions o;
  o.preset = "tiny";
  ASSERT_TRUE(WriteSyntheticCheckpoint(o, dir.string()).ok());
  auto g4m = LoadCausalLM(dir.string());
  ASSERT_TRUE(g4m.ok()) << g4m.status().ToString();
  EXPECT_EQ((*g4m)->info().architecture, "gemma4");
  EXPECT_LT(NumKvOwningLayers((*g4m)->info()), static_cast<int>((*g4m)->info().layers.size()));  // KV sharing

  const std::string gemma3 = std::string(G4_SOURCE_DIR) + "/tests/data/hf-gemma3/";
  for (const char* c : {"hf-gemma3-270m-like", "hf-gemma3-4b-like"}) {
    auto m = LoadCausalLM(gemma3 + c);
    ASSERT_TRUE(m.ok()) << c << ": " << m.status().ToString();
    EXPECT_EQ((*m)->info().architecture, "gemma3") << c;
    // Gemma 3: every layer owns its K/V.
    EXPECT_EQ(NumKvOwningLayers((*m)->info()), static_cast<int>((*m)->info().layers.size()));
  }
  fs::remove_all(dir);
}

TEST(RegistryTest, AnOldConfigIsFoundByItsArchitectures) {
  auto c = Checkpoint::Open(std::string(G4_SOURCE_DIR) + "/tests/data/hf-gemma3/hf-gemma3-270m-like");
  ASSERT_TRUE(c.ok());
  auto a = FindArchitecture(**c);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ((*a)->name, "gemma3");

  const fs::path dir = testing::ProcessTempPath("g4_registry_old");
  WriteConfig(dir, R"({"architectures": ["Gemma3ForCausalLM"]})");
  Checkpoint::OpenOptions json_only;
  json_only.weights = false;
  auto old = Checkpoint::Open(dir.string(), json_only);
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  auto found = FindArchitecture(**old);
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_EQ((*found)->name, "gemma3");
  fs::remove_all(dir);
}

TEST(RegistryTest, UnknownArchitecturesAreRefusedByName) {
  const fs::path dir = testing::ProcessTempPath("g4_registry_llama");
  WriteConfig(dir, R"({"model_type": "llama", "architectures": ["LlamaForCausalLM"]})");
  Checkpoint::OpenOptions json_only;
  json_only.weights = false;
  auto c = Checkpoint::Open(dir.string(), json_only);
  ASSERT_TRUE(c.ok());
  auto a = FindArchitecture(**c);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), StatusCode::kUnimplemented);
  EXPECT_THAT(a.status().message(), HasSubstr("config.json: model_type is 'llama'; g4 runs "
                                              "gemma4, gemma4_text, gemma3, gemma3_text"));
  // Through the whole load, too.
  auto m = LoadCausalLM(dir.string());
  ASSERT_FALSE(m.ok());
  fs::remove_all(dir);
}

TEST(RegistryTest, PathsThatAreNoCheckpointAreNamed) {
  auto m = LoadCausalLM("/no/such/model");
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("/no/such/model"));
  const fs::path file = testing::ProcessTempPath("g4_registry_file.txt");
  std::ofstream(file) << "not a model";
  m = LoadCausalLM(file.string());
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("not a checkpoint directory"));
  fs::remove(file);
}

}  // namespace
}  // namespace g4
