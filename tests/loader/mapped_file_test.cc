// Tests for MappedFile: contents, empty files and the error paths.
#include "loader/mapped_file.h"

#include <cstring>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "loader/loader_test_util.h"

namespace g4 {
namespace {

using ::testing::HasSubstr;
using loader_test::ScopedTempDir;
using loader_test::WriteFile;

TEST(MappedFileTest, MapsWholeFile) {
  ScopedTempDir dir;
  const std::string path = dir.File("hello.bin");
  WriteFile(path, "hello world");
  auto file = MappedFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ((*file)->size(), 11u);
  EXPECT_EQ((*file)->path(), path);
  EXPECT_EQ(std::memcmp((*file)->data(), "hello world", 11), 0);
  EXPECT_EQ((*file)->bytes(), "hello world");
}

TEST(MappedFileTest, EmptyFileIsOk) {
  ScopedTempDir dir;
  const std::string path = dir.File("empty.bin");
  WriteFile(path, "");
  auto file = MappedFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ((*file)->size(), 0u);
  EXPECT_TRUE((*file)->bytes().empty());
}

TEST(MappedFileTest, MissingFileIsNotFound) {
  ScopedTempDir dir;
  const std::string path = dir.File("nope.bin");
  auto file = MappedFile::Open(path);
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(file.status().message(), HasSubstr(path));
  EXPECT_THAT(file.status().message(), HasSubstr("No such file"));
}

TEST(MappedFileTest, DirectoryIsIoError) {
  ScopedTempDir dir;
  auto file = MappedFile::Open(dir.path());
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), StatusCode::kIo);
  EXPECT_THAT(file.status().message(), HasSubstr(dir.path()));
  EXPECT_THAT(file.status().message(), HasSubstr("not a regular file"));
}

}  // namespace
}  // namespace g4
