// Tests for reading tokenizer.json: both merge spellings, and errors that say what is wrong for
// malformed, truncated and unsupported files.
#include "tokenizer/tokenizer_json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tokenizer/test_util.h"
#include "tokenizer/tokenizer.h"

namespace g4 {
namespace {

using ::testing::HasSubstr;
using tokenizer_test::MakeTokenizerJson;

const std::vector<std::string> kPieces = {"a", "b", "ab", "\u2581", "\u2581ab"};
const std::vector<std::pair<std::string, std::string>> kMerges = {{"a", "b"}, {"\u2581", "ab"}};

TEST(TokenizerJsonTest, ReadsBothMergeSpellings) {
  for (bool as_strings : {false, true}) {
    auto tj = ParseTokenizerJson(MakeTokenizerJson(kPieces, kMerges, {}, as_strings), "t.json");
    ASSERT_TRUE(tj.ok()) << tj.status().ToString();
    EXPECT_EQ((*tj)->vocab.size(), 256u + kPieces.size());
    ASSERT_EQ((*tj)->merges.size(), 2u);
    EXPECT_EQ((*tj)->merges[1].first, "\u2581");
    EXPECT_EQ((*tj)->merges[1].second, "ab");
    EXPECT_EQ((*tj)->merges_as_strings, as_strings);
    EXPECT_TRUE((*tj)->byte_fallback);
    ASSERT_EQ((*tj)->normalizer.size(), 1u);
    EXPECT_EQ((*tj)->normalizer[0].to, "\u2581");
    EXPECT_EQ((*tj)->split_after, " ");
    EXPECT_TRUE((*tj)->decoder_byte_fallback);
  }
}

Status LoadError(const std::string& text) {
  auto t = Tokenizer::FromJsonText(text, "tok.json");
  return t.ok() ? Status::Ok() : t.status();
}

TEST(TokenizerJsonTest, TruncatedFileSaysWhereItEnds) {
  const std::string full = MakeTokenizerJson(kPieces, kMerges);
  for (size_t cut : {full.size() / 4, full.size() / 2, full.size() - 3}) {
    const Status s = LoadError(full.substr(0, cut));
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
    EXPECT_THAT(s.message(), HasSubstr("tok.json"));
    EXPECT_THAT(s.message(), HasSubstr("truncated"));
  }
}

TEST(TokenizerJsonTest, MalformedPartsAreNamed) {
  std::string text = MakeTokenizerJson(kPieces, kMerges);
  std::string bad = text;
  bad.replace(bad.find("\"ab\": "), 6, "\"ab\": \"x\"");  // a string id
  EXPECT_THAT(LoadError(bad).message(), HasSubstr("model.vocab[\"ab\"]"));

  bad = MakeTokenizerJson(kPieces, {{"a", "b"}, {"\u2581", "zz"}});
  EXPECT_THAT(LoadError(bad).message(), HasSubstr("model.merges[1]: 'zz' is not in model.vocab"));

  bad = MakeTokenizerJson(kPieces, {{"a", "b c"}}, {}, /*merges_as_strings=*/true);
  EXPECT_THAT(LoadError(bad).message(), HasSubstr("model.merges[0]"));

  bad = text;
  bad.replace(bad.find("\"vocab\""), 7, "\"vocabx\"");
  EXPECT_THAT(LoadError(bad).message(), HasSubstr("model.vocab: missing"));

  EXPECT_THAT(LoadError("[]").message(), HasSubstr("expected a JSON object"));
  EXPECT_THAT(LoadError("{}").message(), HasSubstr("model: missing"));
  EXPECT_THAT(LoadError("").message(), HasSubstr("tok.json"));
}

TEST(TokenizerJsonTest, UnsupportedSettingsAreUnimplemented) {
  std::string text = MakeTokenizerJson(kPieces, kMerges);
  std::string bad = text;
  bad.replace(bad.find("\"BPE\""), 5, "\"Unigram\"");
  Status s = LoadError(bad);
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_THAT(s.message(), HasSubstr("Unigram"));

  bad = text;
  bad.replace(bad.find("\"Replace\""), 9, "\"NFKC\"");
  s = LoadError(bad);
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_THAT(s.message(), HasSubstr("normalizer type 'NFKC'"));
}

TEST(TokenizerJsonTest, MissingFileIsNotFound) {
  auto t = Tokenizer::Load("/nonexistent/g4/tokenizer.json");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(t.status().message(), HasSubstr("/nonexistent/g4/tokenizer.json"));
}

}  // namespace
}  // namespace g4
