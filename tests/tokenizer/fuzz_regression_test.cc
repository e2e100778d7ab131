// Hostile-input limits of the tokenizer.json reader (tests/fuzz/README.md): per-id tables are
// sized by the largest id, so a tiny file must not be able to name a huge one.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tokenizer/test_util.h"
#include "tokenizer/tokenizer.h"

namespace g4 {
namespace {

using ::testing::HasSubstr;
using tokenizer_test::MakeTokenizerJson;

std::string WithId(const std::string& piece, int64_t id, bool added) {
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(
      MakeTokenizerJson({"a", "b", "ab"}, {{"a", "b"}}, {{"<bos>", true}}));
  if (added) {
    j["added_tokens"][0]["id"] = id;
  } else {
    j["model"]["vocab"][piece] = id;
  }
  return j.dump();
}

// 260 pieces and one id of 16 million used to allocate ~250 MB of per-id tables.
TEST(TokenizerFuzzRegressionTest, SparseHugeIdIsRefused) {
  for (bool added : {false, true}) {
    auto t = Tokenizer::FromJsonText(WithId("ab", 16'000'000, added), "tok.json");
    ASSERT_FALSE(t.ok()) << "added=" << added;
    EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(t.status().message(), HasSubstr("tok.json: the largest token id is 16000000"));
  }
}

// Small holes (ids with no piece, as some checkpoints have) stay accepted.
TEST(TokenizerFuzzRegressionTest, SmallHolesAreAccepted) {
  auto t = Tokenizer::FromJsonText(WithId("ab", 1000, /*added=*/false), "tok.json");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ((*t)->vocab_size(), 1001);
  EXPECT_EQ((*t)->TokenId("ab"), 1000);
}

}  // namespace
}  // namespace g4
