// Tests for reading BOS/EOS/PAD and the stop set from a checkpoint's JSON side files.
#include "tokenizer/special_tokens.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tokenizer/test_util.h"
#include "tokenizer/tokenizer.h"

namespace g4 {
namespace {

using tokenizer_test::ScopedTempDir;
using tokenizer_test::WriteFile;

class SpecialTokensTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WriteFile(dir_.File("tokenizer.json"),
              tokenizer_test::MakeTokenizerJson(
                  {"a"}, {},
                  {{"<pad>", true}, {"<eos>", true}, {"<bos>", true}, {"<unk>", true},
                   {"<|tool_response>", true}, {"<turn|>", true}}));
  }
  StatusOr<std::unique_ptr<Tokenizer>> Load() { return Tokenizer::Load(dir_.path()); }
  ScopedTempDir dir_;
};

TEST_F(SpecialTokensTest, DefaultsFromTokenNames) {
  auto t = Load();
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  const SpecialTokenIds& s = (*t)->special_ids();
  EXPECT_EQ(s.bos, (*t)->TokenId("<bos>"));
  EXPECT_EQ(s.eos, (*t)->TokenId("<eos>"));
  EXPECT_EQ(s.pad, (*t)->TokenId("<pad>"));
  EXPECT_EQ(s.stop_ids, (std::vector<int32_t>{(*t)->TokenId("<eos>"),
                                              (*t)->TokenId("<|tool_response>"),
                                              (*t)->TokenId("<turn|>")}));
  EXPECT_FALSE(s.add_bos_token);
}

TEST_F(SpecialTokensTest, GenerationConfigGivesTheStopSet) {
  WriteFile(dir_.File("tokenizer_config.json"),
            R"({"add_bos_token": true, "bos_token": {"content": "<bos>"}, "eos_token": "<turn|>",
                "pad_token": "<pad>"})");
  WriteFile(dir_.File("generation_config.json"), R"({"eos_token_id": [257, 256], "pad_token_id": 256})");
  auto t = Load();
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  const SpecialTokenIds& s = (*t)->special_ids();
  EXPECT_TRUE(s.add_bos_token);
  EXPECT_EQ(s.eos, (*t)->TokenId("<turn|>"));
  EXPECT_EQ(s.pad, 256);
  EXPECT_EQ(s.stop_ids, (std::vector<int32_t>{256, 257, (*t)->TokenId("<turn|>")}));
}

TEST_F(SpecialTokensTest, BadFilesAreNamed) {
  WriteFile(dir_.File("tokenizer_config.json"), R"({"eos_token": "<nope>"})");
  auto t = Load();
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(t.status().message(), ::testing::HasSubstr("tokenizer_config.json: eos_token '<nope>'"));
  WriteFile(dir_.File("tokenizer_config.json"), "{}");
  WriteFile(dir_.File("generation_config.json"), R"({"eos_token_id": 999999})");
  t = Load();
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(t.status().message(), ::testing::HasSubstr("generation_config.json: eos_token_id"));
}

}  // namespace
}  // namespace g4
