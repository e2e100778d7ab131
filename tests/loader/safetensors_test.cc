// Tests for SafetensorsFile: valid files, every validation error (checking the message text),
// and that opening maps rather than copies.
#include "loader/safetensors.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "loader/loader_test_util.h"
#include "loader/safetensors_writer.h"

namespace g4 {
namespace {

using ::testing::HasSubstr;
using loader_test::RawSafetensors;
using loader_test::ScopedTempDir;
using loader_test::U64Le;
using loader_test::WriteFile;

class SafetensorsTest : public ::testing::Test {
 protected:
  // Writes `bytes` to a file and opens it.
  StatusOr<std::unique_ptr<SafetensorsFile>> OpenBytes(std::string_view bytes) {
    WriteFile(path_, bytes);
    return SafetensorsFile::Open(path_);
  }
  // Writes `bytes`, expects Open to fail and returns its status.
  Status OpenError(std::string_view bytes) {
    auto f = OpenBytes(bytes);
    EXPECT_FALSE(f.ok());
    return f.ok() ? Status::Ok() : f.status();
  }

  ScopedTempDir dir_;
  const std::string path_ = dir_.File("model.safetensors");
};

TEST_F(SafetensorsTest, ParsesTensorsInFileOrder) {
  const std::string header =
      R"({"__metadata__":{"format":"pt"},)"
      R"("b":{"dtype":"F32","shape":[2],"data_offsets":[2,10]},)"
      R"("a":{"dtype":"BF16","shape":[1],"data_offsets":[0,2]}})";
  const float vals[2] = {1.5f, -2.0f};
  std::string data = "\x80\x3f";  // bf16 1.0
  data.append(reinterpret_cast<const char*>(vals), 8);
  auto f = OpenBytes(RawSafetensors(header, data));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const auto& t = (*f)->tensors();
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].name, "a");
  EXPECT_EQ(t[1].name, "b");
  EXPECT_EQ((*f)->path(), path_);
  EXPECT_EQ((*f)->metadata().at("format"), "pt");

  const TensorInfo* b = (*f)->Find("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->dtype, DType::kF32);
  EXPECT_EQ(b->shape, (std::vector<int64_t>{2}));
  EXPECT_EQ(b->nbytes, 8u);
  EXPECT_EQ(b->file, path_);
  TensorView v = b->view();
  EXPECT_EQ(v.at(0), 1.5f);  // read through a pointer at odd alignment: allowed
  EXPECT_EQ(v.at(1), -2.0f);
  EXPECT_EQ((*f)->Find("a")->view().at(0), 1.0f);
  EXPECT_EQ((*f)->Find("c"), nullptr);
}

TEST_F(SafetensorsTest, EmptyAndScalarTensors) {
  const std::string header =
      R"({"empty":{"dtype":"F16","shape":[0,3],"data_offsets":[4,4]},)"
      R"("scalar":{"dtype":"I32","shape":[],"data_offsets":[0,4]}})";
  auto f = OpenBytes(RawSafetensors(header, std::string("\x07\0\0\0", 4)));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ((*f)->Find("empty")->nbytes, 0u);
  EXPECT_EQ((*f)->Find("scalar")->view().numel(), 1);
  int32_t x;
  std::memcpy(&x, (*f)->Find("scalar")->data, 4);
  EXPECT_EQ(x, 7);
}

TEST_F(SafetensorsTest, TensorPointersLieInsideTheFile) {
  const std::string header = R"({"w":{"dtype":"U8","shape":[3],"data_offsets":[1,4]}})";
  auto f = OpenBytes(RawSafetensors(header, "abcd"));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(std::string(static_cast<const char*>((*f)->Find("w")->data), 3), "bcd");
}

TEST_F(SafetensorsTest, FileShorterThanEightBytes) {
  Status s = OpenError(std::string("\x05\0\0", 3));
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr(path_ + ": truncated: the file is 3 bytes"));
}

TEST_F(SafetensorsTest, EmptyFile) {
  Status s = OpenError("");
  EXPECT_THAT(s.message(), HasSubstr(path_ + ": truncated"));
}

TEST_F(SafetensorsTest, HeaderLengthPastTheEnd) {
  Status s = OpenError(U64Le(1000) + "{}");
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr(path_));
  EXPECT_THAT(s.message(), HasSubstr("header length 1000 runs past the end of the file"));
}

TEST_F(SafetensorsTest, HeaderLengthOverTheCap) {
  // A sparse file big enough that the length is in range, so only the cap can reject it.
  const uint64_t len = kMaxSafetensorsHeaderBytes + 1;
  WriteFile(path_, U64Le(len));
  ASSERT_EQ(::truncate(path_.c_str(), static_cast<off_t>(8 + len)), 0);
  auto f = SafetensorsFile::Open(path_);
  ASSERT_FALSE(f.ok());
  EXPECT_THAT(f.status().message(), HasSubstr(path_));
  EXPECT_THAT(f.status().message(), HasSubstr("exceeds the sanity cap"));
}

TEST_F(SafetensorsTest, MalformedJson) {
  Status s = OpenError(RawSafetensors(R"({"a": {"dtype": "F32",)", ""));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr(path_ + ": header: malformed JSON: at byte"));
}

TEST_F(SafetensorsTest, HeaderNotAnObject) {
  Status s = OpenError(RawSafetensors("[1, 2]", ""));
  EXPECT_THAT(s.message(), HasSubstr(path_ + ": header is not a JSON object (found array)"));
}

TEST_F(SafetensorsTest, EntryNotAnObject) {
  Status s = OpenError(RawSafetensors(R"({"w": 3})", ""));
  EXPECT_THAT(s.message(), HasSubstr(path_ + ": tensor 'w': entry is 3"));
}

TEST_F(SafetensorsTest, DataCutShort) {
  const std::string header = R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})";
  Status s = OpenError(RawSafetensors(header, std::string(10, 'x')));
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr(path_ + ": tensor 'w': byte range [0,16) outside the "
                                     "data section of 10 bytes"));
}

TEST_F(SafetensorsTest, ByteRangeFarOutsideTheFile) {
  const std::string header =
      R"({"w":{"dtype":"U8","shape":[4],)"
      R"("data_offsets":[18446744073709551611,18446744073709551615]}})";
  Status s = OpenError(RawSafetensors(header, "abcd"));
  EXPECT_THAT(s.message(), HasSubstr("tensor 'w': byte range [18446744073709551611,"
                                     "18446744073709551615) outside the data section of 4"));
}

TEST_F(SafetensorsTest, ShapeAndDtypeSizeMismatch) {
  const std::string header = R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,20]}})";
  Status s = OpenError(RawSafetensors(header, std::string(20, 'x')));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr(path_ + ": tensor 'w': dtype F32 with shape [2, 3] needs "
                                     "24 bytes but data_offsets [0,20) hold 20 bytes"));
}

TEST_F(SafetensorsTest, UnknownDtype) {
  const std::string header = R"({"w":{"dtype":"Q7","shape":[1],"data_offsets":[0,1]}})";
  Status s = OpenError(RawSafetensors(header, "x"));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr(path_ + ": tensor 'w': unknown dtype 'Q7'"));
}

TEST_F(SafetensorsTest, UnsupportedDtypes) {
  for (const char* dtype : {"F8_E4M3", "BOOL", "F64"}) {
    const std::string header = std::string(R"({"w":{"dtype":")") + dtype +
                               R"(","shape":[1],"data_offsets":[0,1]}})";
    Status s = OpenError(RawSafetensors(header, "x"));
    EXPECT_EQ(s.code(), StatusCode::kUnimplemented) << dtype;
    EXPECT_THAT(s.message(),
                HasSubstr(path_ + ": tensor 'w': unsupported dtype '" + dtype + "'"));
  }
}

TEST_F(SafetensorsTest, MissingDtype) {
  Status s = OpenError(RawSafetensors(R"({"w":{"shape":[1],"data_offsets":[0,1]}})", "x"));
  EXPECT_THAT(s.message(), HasSubstr("tensor 'w': field 'dtype' is missing or not a string"));
}

TEST_F(SafetensorsTest, OverlappingTensors) {
  const std::string header =
      R"({"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"U8","shape":[8],"data_offsets":[4,12]}})";
  Status s = OpenError(RawSafetensors(header, std::string(12, 'x')));
  EXPECT_THAT(s.message(), HasSubstr(path_ + ": tensors 'a' [0,8) and 'b' [4,12) overlap"));
}

TEST_F(SafetensorsTest, TensorInsideAnotherOverlaps) {
  const std::string header =
      R"({"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"U8","shape":[1],"data_offsets":[2,3]},)"
      R"("c":{"dtype":"U8","shape":[1],"data_offsets":[5,6]}})";
  Status s = OpenError(RawSafetensors(header, std::string(8, 'x')));
  EXPECT_THAT(s.message(), HasSubstr("tensors 'a' [0,8) and 'b' [2,3) overlap"));
}

TEST_F(SafetensorsTest, NegativeShape) {
  const std::string header = R"({"w":{"dtype":"U8","shape":[2,-1],"data_offsets":[0,0]}})";
  Status s = OpenError(RawSafetensors(header, ""));
  EXPECT_THAT(s.message(), HasSubstr(path_ + ": tensor 'w': field 'shape' element 1 is -1; "
                                     "dimensions must be non-negative integers"));
}

TEST_F(SafetensorsTest, FractionalShape) {
  const std::string header = R"({"w":{"dtype":"U8","shape":[2.5],"data_offsets":[0,2]}})";
  Status s = OpenError(RawSafetensors(header, "xx"));
  EXPECT_THAT(s.message(), HasSubstr("field 'shape' element 0 is 2.5"));
}

TEST_F(SafetensorsTest, ShapeProductOverflow) {
  const std::string header =
      R"({"w":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,0]}})";
  Status s = OpenError(RawSafetensors(header, ""));
  EXPECT_THAT(s.message(), HasSubstr("tensor 'w': shape [4294967296, 4294967296] has too many "
                                     "elements"));
}

TEST_F(SafetensorsTest, ByteCountOverflow) {
  const std::string header =
      R"({"w":{"dtype":"I64","shape":[4611686018427387904],"data_offsets":[0,0]}})";
  Status s = OpenError(RawSafetensors(header, ""));
  EXPECT_THAT(s.message(), HasSubstr("tensor 'w': shape [4611686018427387904] of I64 overflows"));
}

TEST_F(SafetensorsTest, BadDataOffsets) {
  struct Case {
    const char* offsets;
    const char* expected;
  };
  for (const Case& c : {Case{"[0]", "field 'data_offsets' is missing or not an array of 2"},
                        Case{"[-1,0]", "field 'data_offsets' is [-1,0]; offsets must be"},
                        Case{"[\"0\",1]", "field 'data_offsets' is [\"0\",1]; offsets must be"},
                        Case{"[1,0]", "field 'data_offsets' [1,0] has begin > end"}}) {
    const std::string header =
        std::string(R"({"w":{"dtype":"U8","shape":[1],"data_offsets":)") + c.offsets + "}}";
    Status s = OpenError(RawSafetensors(header, "x"));
    EXPECT_THAT(s.message(), HasSubstr(path_ + ": tensor 'w': " + c.expected)) << c.offsets;
  }
}

TEST_F(SafetensorsTest, DuplicateTensorName) {
  const std::string header =
      R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
      R"("w":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})";
  Status s = OpenError(RawSafetensors(header, "xy"));
  EXPECT_THAT(s.message(), HasSubstr(path_ + ": duplicate tensor name 'w'"));
}

TEST_F(SafetensorsTest, MetadataMustBeStrings) {
  Status s = OpenError(RawSafetensors(R"({"__metadata__":{"step":3}})", ""));
  EXPECT_THAT(s.message(), HasSubstr(path_ + ": __metadata__ field 'step' is 3"));
}

// Every prefix of a valid file must be rejected cleanly (no crash, no exception).
TEST_F(SafetensorsTest, EveryTruncationIsAnError) {
  const std::string header =
      R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"I8","shape":[3],"data_offsets":[8,11]}})";
  const std::string full = RawSafetensors(header, std::string(11, 'x'));
  ASSERT_TRUE(OpenBytes(full).ok());
  for (size_t n = 0; n < full.size(); ++n) {
    auto f = OpenBytes(full.substr(0, n));
    EXPECT_FALSE(f.ok()) << "prefix of " << n << " bytes";
    if (!f.ok()) {
      EXPECT_THAT(f.status().message(), HasSubstr(path_));
    }
  }
}

// Resident set size in bytes, from /proc/self/statm.
size_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  size_t total_pages = 0, resident_pages = 0;
  statm >> total_pages >> resident_pages;
  return resident_pages * static_cast<size_t>(::sysconf(_SC_PAGESIZE));
}

TEST_F(SafetensorsTest, OpenMapsInsteadOfCopying) {
  constexpr size_t kBytes = size_t{64} << 20;
  constexpr size_t kChunk = size_t{1} << 20;
  const std::vector<TensorSpec> specs = {{"big", DType::kU8, {static_cast<int64_t>(kBytes)}}};
  Status written = WriteSafetensors(path_, specs, [&](size_t, ByteSink& sink) -> Status {
    std::string chunk(kChunk, '\0');
    for (size_t off = 0; off < kBytes; off += kChunk) {
      chunk[0] = static_cast<char>(off / kChunk);
      G4_RETURN_IF_ERROR(sink.Write(chunk.data(), chunk.size()));
    }
    return Status::Ok();
  });
  ASSERT_TRUE(written.ok()) << written.ToString();

  const size_t before = ResidentBytes();
  auto f = SafetensorsFile::Open(path_);
  const size_t after = ResidentBytes();
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  RecordProperty("resident_growth_bytes",
                 std::to_string(static_cast<int64_t>(after) - static_cast<int64_t>(before)));
  EXPECT_LT(after, before + (size_t{8} << 20))
      << "resident memory grew by " << (after - before) << " bytes";

  const TensorInfo* big = (*f)->Find("big");
  ASSERT_NE(big, nullptr);
  ASSERT_EQ(big->nbytes, kBytes);
  const auto* p = static_cast<const uint8_t*>(big->data);
  EXPECT_EQ(p[0], 0);
  EXPECT_EQ(p[5 * kChunk], 5);
  EXPECT_EQ(p[63 * kChunk], 63);
}

}  // namespace
}  // namespace g4
