// Hostile-input limits of the loader's parsers (tests/fuzz/README.md): inputs that once cost a
// crash, a stack overflow or an allocation sized by an untrusted number stay cheap errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "loader/json_file.h"
#include "loader/loader_test_util.h"
#include "loader/safetensors.h"

namespace g4 {
namespace {

using ::testing::HasSubstr;
using loader_test::RawSafetensors;
using loader_test::ScopedTempDir;
using loader_test::WriteFile;

std::string Nested(int depth, const std::string& inner = "1") {
  return std::string(static_cast<size_t>(depth), '[') + inner +
         std::string(static_cast<size_t>(depth), ']');
}

TEST(LoaderFuzzRegressionTest, JsonNestingIsLimited) {
  auto ok = ParseJson(Nested(kMaxJsonFileDepth), "x.json");
  EXPECT_TRUE(ok.ok()) << ok.status().ToString();

  auto deep = ParseJson(Nested(kMaxJsonFileDepth + 1), "x.json");
  ASSERT_FALSE(deep.ok());
  EXPECT_EQ(deep.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(deep.status().message(), HasSubstr("x.json: malformed JSON: at byte 128"));
  EXPECT_THAT(deep.status().message(), HasSubstr("nested deeper than 128"));

  // Brackets inside strings (escaped quotes included) do not count.
  auto strings = ParseJson(R"({"a": "[[[[\"[[[[", "b": [)" + Nested(100) + "]}", "x.json");
  EXPECT_TRUE(strings.ok()) << strings.status().ToString();
}

// A header whose data_offsets holds a million nested arrays: the error message used to dump()
// it recursively, which overflows the stack.
TEST(LoaderFuzzRegressionTest, DeeplyNestedSafetensorsHeaderIsAnError) {
  ScopedTempDir dir;
  const std::string path = dir.File("deep.safetensors");
  const std::string header = R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[)" +
                             Nested(1'000'000, "0") + ",4]}}";
  WriteFile(path, RawSafetensors(header, std::string(4, '\0')));
  auto file = SafetensorsFile::Open(path);
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(file.status().message(), HasSubstr("nested deeper than"));
  EXPECT_THAT(file.status().message(), HasSubstr(path));
}

}  // namespace
}  // namespace g4
