// Tests for the writers' shared output plumbing: OutputFile (temporary file renamed into place
// on Commit, removed otherwise) and TensorSink (byte-count-checked fill sink).
#include "loader/output_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "loader/loader_test_util.h"

namespace g4::loader_internal {
namespace {

using ::g4::loader_test::ReadFile;
using ::g4::loader_test::ScopedTempDir;
using ::testing::HasSubstr;

bool Exists(const std::string& path) { return std::filesystem::exists(path); }

TEST(OutputFileTest, CommitRenamesThePartialFileIntoPlace) {
  ScopedTempDir dir;
  const std::string path = dir.File("out.bin");
  OutputFile out(path);
  ASSERT_TRUE(out.Open().ok());
  EXPECT_TRUE(Exists(path + ".partial"));
  EXPECT_FALSE(Exists(path)) << "nothing at the final path before Commit";
  ASSERT_TRUE(out.Write("hello", 5).ok());
  EXPECT_EQ(out.pos(), 5u);
  ASSERT_TRUE(out.PadTo(8).ok());
  EXPECT_EQ(out.pos(), 8u);
  ASSERT_TRUE(out.PadTo(8).ok());  // already aligned: no bytes
  ASSERT_TRUE(out.Write("!", 1).ok());
  ASSERT_TRUE(out.Commit().ok());
  EXPECT_FALSE(Exists(path + ".partial"));
  EXPECT_EQ(ReadFile(path), std::string("hello\0\0\0!", 9));
}

TEST(OutputFileTest, CommitReplacesAnEarlierFile) {
  ScopedTempDir dir;
  const std::string path = dir.File("out.bin");
  loader_test::WriteFile(path, "old contents");
  OutputFile out(path);
  ASSERT_TRUE(out.Open().ok());
  ASSERT_TRUE(out.Write("new", 3).ok());
  EXPECT_EQ(ReadFile(path), "old contents") << "the old file stays until Commit";
  ASSERT_TRUE(out.Commit().ok());
  EXPECT_EQ(ReadFile(path), "new");
}

TEST(OutputFileTest, NoCommitLeavesNoFileAndRemovesTheTemporary) {
  ScopedTempDir dir;
  const std::string path = dir.File("out.bin");
  {
    OutputFile out(path);
    ASSERT_TRUE(out.Open().ok());
    ASSERT_TRUE(out.Write("partial", 7).ok());
    ASSERT_TRUE(Exists(path + ".partial"));
  }
  EXPECT_FALSE(Exists(path));
  EXPECT_FALSE(Exists(path + ".partial"));
}

TEST(OutputFileTest, UnwritableDirectoryErrorNamesThePath) {
  ScopedTempDir dir;
  const std::string path = dir.File("no/such/dir/out.bin");
  OutputFile out(path);
  const Status s = out.Open();
  EXPECT_EQ(s.code(), StatusCode::kIo);
  EXPECT_THAT(s.message(), HasSubstr(path + ": cannot create " + path + ".partial"));
}

TEST(TensorSinkTest, ExactWriteInPiecesSucceeds) {
  ScopedTempDir dir;
  const std::string path = dir.File("out.bin");
  OutputFile out(path);
  ASSERT_TRUE(out.Open().ok());
  TensorSink sink(&out, path + ": tensor 'w'", 6);
  ASSERT_TRUE(sink.Write("abc", 3).ok());
  ASSERT_TRUE(sink.Write("", 0).ok());
  ASSERT_TRUE(sink.Write("def", 3).ok());
  EXPECT_EQ(sink.written(), 6u);
  EXPECT_TRUE(sink.Finish(Status::Ok()).ok());
  ASSERT_TRUE(out.Commit().ok());
  EXPECT_EQ(ReadFile(path), "abcdef");
}

TEST(TensorSinkTest, ShortWriteIsAnErrorNamingTheTensor) {
  ScopedTempDir dir;
  OutputFile out(dir.File("out.bin"));
  ASSERT_TRUE(out.Open().ok());
  TensorSink sink(&out, "out.bin: tensor 'w'", 8);
  ASSERT_TRUE(sink.Write("abc", 3).ok());
  Status s = sink.Finish(Status::Ok());
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_THAT(s.message(), HasSubstr("out.bin: tensor 'w': fill wrote 3 of 8 bytes"));
  s = sink.Finish(Status::Ok(), " bytes, expected 8 (F32 [2])");
  EXPECT_THAT(s.message(),
              HasSubstr("out.bin: tensor 'w': fill wrote 3 bytes, expected 8 (F32 [2])"));
}

TEST(TensorSinkTest, OverlongWriteIsAStickyErrorNamingTheTensor) {
  ScopedTempDir dir;
  const std::string path = dir.File("out.bin");
  OutputFile out(path);
  ASSERT_TRUE(out.Open().ok());
  TensorSink sink(&out, "out.bin: tensor 'w'", 4);
  ASSERT_TRUE(sink.Write("abc", 3).ok());
  const Status over = sink.Write("de", 2);
  EXPECT_EQ(over.code(), StatusCode::kInternal);
  EXPECT_THAT(over.message(),
              HasSubstr("out.bin: tensor 'w': fill wrote more than the tensor's 4"));
  EXPECT_EQ(sink.written(), 3u) << "the refused bytes are not counted";
  // Later writes and a fill that reports success still get the first error.
  EXPECT_EQ(sink.Write("d", 1).message(), over.message());
  EXPECT_EQ(sink.Finish(Status::Ok()).message(), over.message());
  EXPECT_EQ(sink.Finish(DataLoss("source gone")).message(), over.message());
  EXPECT_EQ(out.pos(), 3u);
}

TEST(TensorSinkTest, FillErrorGetsTheTensorContext) {
  ScopedTempDir dir;
  OutputFile out(dir.File("out.bin"));
  ASSERT_TRUE(out.Open().ok());
  TensorSink sink(&out, "out.bin: tensor 'w'", 4);
  const Status s = sink.Finish(NotFound("source tensor gone"));
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr("out.bin: tensor 'w'"));
  EXPECT_THAT(s.message(), HasSubstr("source tensor gone"));
}

}  // namespace
}  // namespace g4::loader_internal
