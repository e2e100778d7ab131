// Tests for JsonScanner: values, escapes, and errors that name the byte and the problem.
#include "tokenizer/json_scan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace g4 {
namespace {

using ::testing::HasSubstr;

TEST(JsonScannerTest, WalksObjectsAndArrays) {
  JsonScanner s(R"( {"a": [1, -2, 3], "b": "x\n\u00e9\ud83d\ude0a", "c": {"d": [true, null, 1.5e3]}} )");
  std::vector<int64_t> ints;
  std::string b, scratch;
  std::string_view c_raw;
  Status st = s.ForEachMember([&](std::string_view key) -> Status {
    if (key == "a") {
      return s.ForEachElement([&](size_t) {
        int64_t v;
        G4_RETURN_IF_ERROR(s.ReadInt(&v));
        ints.push_back(v);
        return Status::Ok();
      });
    }
    if (key == "b") {
      std::string_view v;
      G4_RETURN_IF_ERROR(s.ReadString(&v, &scratch));
      b = v;
      return Status::Ok();
    }
    return s.SkipValue(&c_raw);
  });
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_TRUE(s.AtEnd());
  EXPECT_EQ(ints, (std::vector<int64_t>{1, -2, 3}));
  EXPECT_EQ(b, "x\n\xC3\xA9\xF0\x9F\x98\x8A");
  EXPECT_EQ(c_raw, R"({"d": [true, null, 1.5e3]})");
}

Status SkipAll(std::string_view text) {
  JsonScanner s(text);
  G4_RETURN_IF_ERROR(s.SkipValue());
  if (!s.AtEnd()) return s.Error("end");
  return Status::Ok();
}

TEST(JsonScannerTest, ErrorsNameTheByteAndWhatWasExpected) {
  Status st = SkipAll(R"({"a": 1,, "b": 2})");
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("at byte 8"));
  st = SkipAll(R"([1, 2)");
  EXPECT_EQ(st.code(), StatusCode::kDataLoss);
  EXPECT_THAT(st.message(), HasSubstr("truncated"));
  st = SkipAll("[\"abc");
  EXPECT_EQ(st.code(), StatusCode::kDataLoss);
  EXPECT_FALSE(SkipAll("[\"a\x01\"]").ok());         // raw control character
  EXPECT_FALSE(SkipAll("[\"a\xFF\"]").ok());         // invalid UTF-8
  EXPECT_FALSE(SkipAll(R"(["\ud800"])").ok());        // lone surrogate
  EXPECT_FALSE(SkipAll(R"(["\q"])").ok());            // bad escape
  EXPECT_FALSE(SkipAll(R"([1,])").ok());              // trailing comma
  EXPECT_TRUE(SkipAll(R"([1, 2.5, -3e-2, "x", {}, []])").ok());
}

TEST(JsonScannerTest, DeepNestingIsAnErrorNotACrash) {
  const std::string deep(100000, '[');
  EXPECT_FALSE(SkipAll(deep).ok());
}

}  // namespace
}  // namespace g4
