// Tests for ReadJsonFile / ParseJson: errors come back as Status naming the file and byte.
#include "loader/json_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "loader/loader_test_util.h"

namespace g4 {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using loader_test::ScopedTempDir;
using loader_test::WriteFile;

TEST(JsonFileTest, ReadsObject) {
  ScopedTempDir dir;
  const std::string path = dir.File("config.json");
  WriteFile(path, R"({"hidden_size": 1536, "name": "gemma"})");
  auto j = ReadJsonFile(path);
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ((*j)["hidden_size"], 1536);
  EXPECT_EQ((*j)["name"], "gemma");
}

TEST(JsonFileTest, MissingFileIsNotFound) {
  ScopedTempDir dir;
  const std::string path = dir.File("config.json");
  auto j = ReadJsonFile(path);
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(j.status().message(), HasSubstr(path));
}

TEST(JsonFileTest, MalformedFileNamesPathAndByte) {
  ScopedTempDir dir;
  const std::string path = dir.File("config.json");
  WriteFile(path, R"({"a": 1,, "b": 2})");
  auto j = ReadJsonFile(path);
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(j.status().message(), HasSubstr(path + ": malformed JSON: at byte 9"));
  EXPECT_THAT(j.status().message(), HasSubstr("syntax error"));
  EXPECT_THAT(j.status().message(), Not(HasSubstr("[json.exception")));
}

TEST(JsonFileTest, EmptyFileIsMalformed) {
  ScopedTempDir dir;
  const std::string path = dir.File("empty.json");
  WriteFile(path, "");
  auto j = ReadJsonFile(path);
  ASSERT_FALSE(j.ok());
  EXPECT_THAT(j.status().message(), HasSubstr(path + ": malformed JSON"));
}

TEST(JsonFileTest, ParseJsonUsesGivenName) {
  auto j = ParseJson("[1, 2", "the header of x.safetensors");
  ASSERT_FALSE(j.ok());
  EXPECT_THAT(j.status().message(), HasSubstr("the header of x.safetensors: malformed JSON"));
}

TEST(JsonFileTest, NumberOverflowIsAnErrorNotAnException) {
  auto j = ParseJson("[1e99999]", "big.json");
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(j.status().message(), HasSubstr("big.json: malformed JSON"));
}

TEST(JsonFileTest, InvalidUtf8IsAnError) {
  auto j = ParseJson("[\"\xff\"]", "bad.json");
  ASSERT_FALSE(j.ok());
  EXPECT_THAT(j.status().message(), HasSubstr("bad.json: malformed JSON"));
}

}  // namespace
}  // namespace g4
