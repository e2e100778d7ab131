// Tests for the streaming safetensors writer: exact round trips through the reader, header
// layout, and the fill byte-count checks.
#include "loader/safetensors_writer.h"

#include <unistd.h>

#include <cstring>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "loader/loader_test_util.h"
#include "loader/safetensors.h"

namespace g4 {
namespace {

using ::testing::HasSubstr;
using loader_test::FillFrom;
using loader_test::PatternBytes;
using loader_test::ReadFile;
using loader_test::ScopedTempDir;
using loader_test::SpecsOf;
using loader_test::TestTensor;

template <typename T>
std::string BytesOf(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

uint64_t HeaderLength(const std::string& file) {
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(static_cast<uint8_t>(file[i])) << (8 * i);
  return n;
}

// One tensor of every dtype, with values that exercise sign bits, extremes and odd sizes.
std::vector<TestTensor> EveryDtype() {
  const std::vector<float> f32 = {0.0f, -0.0f, 1.5f, -3.25e-7f, 3.4e38f, 1e-45f};
  std::vector<uint16_t> bf16, f16;
  for (float x : {1.0f, -2.5f, 0.15625f, 65504.0f, -1e-3f, 0.0f}) {
    bf16.push_back(F32ToBf16(x));
    f16.push_back(F32ToF16(x));
  }
  const std::vector<int32_t> i32 = {0, -1, INT32_MIN, INT32_MAX};
  const std::vector<int64_t> i64 = {INT64_MIN, -7, 0, INT64_MAX};
  const std::vector<uint8_t> u8 = {0, 1, 127, 128, 255};
  const std::vector<int8_t> i8 = {-128, -1, 0, 1, 127};
  return {
      {{"f32", DType::kF32, {2, 3}}, BytesOf(f32)},
      {{"bf16", DType::kBF16, {3, 2}}, BytesOf(bf16)},
      {{"f16", DType::kF16, {6}}, BytesOf(f16)},
      {{"i32", DType::kI32, {2, 2}}, BytesOf(i32)},
      {{"i64", DType::kI64, {4}}, BytesOf(i64)},
      {{"u8", DType::kU8, {5}}, BytesOf(u8)},
      {{"i8", DType::kI8, {5, 1}}, BytesOf(i8)},
  };
}

TEST(SafetensorsWriterTest, RoundTripsEveryDtypeExactly) {
  ScopedTempDir dir;
  const std::string path = dir.File("all.safetensors");
  const std::vector<TestTensor> tensors = EveryDtype();
  Status s = WriteSafetensors(path, SpecsOf(tensors), FillFrom(tensors));
  ASSERT_TRUE(s.ok()) << s.ToString();

  auto f = SafetensorsFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ASSERT_EQ((*f)->tensors().size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TestTensor& want = tensors[i];
    const TensorInfo& got = (*f)->tensors()[i];  // file order == the order given
    EXPECT_EQ(got.name, want.spec.name);
    EXPECT_EQ(got.dtype, want.spec.dtype) << want.spec.name;
    EXPECT_EQ(got.shape, want.spec.shape) << want.spec.name;
    ASSERT_EQ(got.nbytes, want.bytes.size()) << want.spec.name;
    EXPECT_EQ(std::memcmp(got.data, want.bytes.data(), got.nbytes), 0) << want.spec.name;
  }
  const TensorView f32 = (*f)->Find("f32")->view();
  EXPECT_EQ(f32.at(2), 1.5f);
  EXPECT_EQ(f32.at(4), 3.4e38f);
  EXPECT_EQ((*f)->Find("bf16")->view().at(1), -2.5f);
  EXPECT_EQ((*f)->Find("f16")->view().at(3), 65504.0f);
  int64_t i64_min;
  std::memcpy(&i64_min, (*f)->Find("i64")->data, 8);
  EXPECT_EQ(i64_min, INT64_MIN);
}

TEST(SafetensorsWriterTest, DataSectionIsAlignedAndHeaderKeepsOrder) {
  ScopedTempDir dir;
  const std::string path = dir.File("x.safetensors");
  // Names chosen so the JSON length is not a multiple of 8 before padding.
  const std::vector<TestTensor> tensors = {{{"zeta", DType::kU8, {3}}, "abc"},
                                           {{"alpha", DType::kF32, {1}}, PatternBytes(4, 1)}};
  ASSERT_TRUE(WriteSafetensors(path, SpecsOf(tensors), FillFrom(tensors)).ok());
  const std::string file = ReadFile(path);
  const uint64_t n = HeaderLength(file);
  EXPECT_EQ((8 + n) % 8, 0u);
  EXPECT_EQ(file.size(), 8 + n + 7);
  const std::string header = file.substr(8, n);
  EXPECT_LT(header.find("zeta"), header.find("alpha"));
  EXPECT_EQ(file.substr(8 + n, 3), "abc");
}

TEST(SafetensorsWriterTest, MetadataRoundTrips) {
  ScopedTempDir dir;
  const std::string path = dir.File("m.safetensors");
  const std::vector<TestTensor> tensors = {{{"w", DType::kI8, {2}}, "\x01\x02"}};
  Status s = WriteSafetensors(path, SpecsOf(tensors), FillFrom(tensors),
                              {{"format", "pt"}, {"source", "g4 test"}});
  ASSERT_TRUE(s.ok()) << s.ToString();
  auto f = SafetensorsFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ((*f)->metadata().at("format"), "pt");
  EXPECT_EQ((*f)->metadata().at("source"), "g4 test");
}

TEST(SafetensorsWriterTest, NoTensors) {
  ScopedTempDir dir;
  const std::string path = dir.File("empty.safetensors");
  ASSERT_TRUE(WriteSafetensors(path, {}, nullptr).ok());
  auto f = SafetensorsFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_TRUE((*f)->tensors().empty());
}

TEST(SafetensorsWriterTest, FillWritingTooFewBytesIsInternal) {
  ScopedTempDir dir;
  const std::string path = dir.File("short.safetensors");
  const std::vector<TensorSpec> specs = {{"w", DType::kF32, {2}}};
  Status s = WriteSafetensors(path, specs, [](size_t, ByteSink& sink) {
    return sink.Write("abc", 3);
  });
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_THAT(s.message(), HasSubstr(path + ": tensor 'w': fill wrote 3 bytes, expected 8"));
  EXPECT_NE(::access(path.c_str(), F_OK), 0) << "no file may be left behind";
  EXPECT_NE(::access((path + ".partial").c_str(), F_OK), 0);
}

TEST(SafetensorsWriterTest, FillWritingTooManyBytesIsInternal) {
  ScopedTempDir dir;
  const std::string path = dir.File("long.safetensors");
  const std::vector<TensorSpec> specs = {{"w", DType::kU8, {2}}};
  Status s = WriteSafetensors(path, specs, [](size_t, ByteSink& sink) {
    (void)sink.Write("abc", 3);  // the error sticks even if the callback drops it
    return Status::Ok();
  });
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_THAT(s.message(), HasSubstr(path + ": tensor 'w': fill wrote more than the tensor's 2"));
}

TEST(SafetensorsWriterTest, FillErrorGetsContext) {
  ScopedTempDir dir;
  const std::string path = dir.File("err.safetensors");
  const std::vector<TensorSpec> specs = {{"w", DType::kU8, {2}}};
  Status s = WriteSafetensors(path, specs,
                              [](size_t, ByteSink&) { return NotFound("source tensor gone"); });
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr(path + ": tensor 'w': source tensor gone"));
}

TEST(SafetensorsWriterTest, RejectsBadSpecs) {
  ScopedTempDir dir;
  const std::string path = dir.File("bad.safetensors");
  Status dup = WriteSafetensors(path, {{"w", DType::kU8, {1}}, {"w", DType::kU8, {1}}}, nullptr);
  EXPECT_THAT(dup.message(), HasSubstr(path + ": tensor 'w': duplicate tensor name"));
  Status neg = WriteSafetensors(path, {{"w", DType::kU8, {-2}}}, nullptr);
  EXPECT_THAT(neg.message(), HasSubstr(path + ": tensor 'w': negative dimension"));
  Status reserved = WriteSafetensors(path, {{"__metadata__", DType::kU8, {1}}}, nullptr);
  EXPECT_THAT(reserved.message(), HasSubstr("reserved or empty name"));
  Status no_fill = WriteSafetensors(path, {{"w", DType::kU8, {1}}}, nullptr);
  EXPECT_THAT(no_fill.message(), HasSubstr(path + ": no fill callback given"));
}

TEST(SafetensorsWriterTest, UnwritablePathIsIoError) {
  ScopedTempDir dir;
  const std::string path = dir.File("no/such/dir/x.safetensors");
  Status s = WriteSafetensors(path, {}, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kIo);
  EXPECT_THAT(s.message(), HasSubstr(path + ": cannot create"));
}

}  // namespace
}  // namespace g4
