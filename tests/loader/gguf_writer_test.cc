// Tests for the GGUF writer: the bytes it writes, decoded here by hand against formats.md §2.1
// (header, every value type, reversed ne, aligned offsets and padding), and its errors.
#include "loader/gguf_writer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "loader/gguf.h"
#include "loader/loader_test_util.h"

namespace g4 {
namespace {

using ::testing::HasSubstr;

std::string ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Reads little-endian values off a byte string, failing the test on overrun.
class Cursor {
 public:
  explicit Cursor(const std::string& b) : b_(b) {}
  template <typename T>
  T Get() {
    T v{};
    if (pos_ + sizeof(T) > b_.size()) {
      ADD_FAILURE() << "read past the end at " << pos_;
      return v;
    }
    std::memcpy(&v, b_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string Str() {
    const uint64_t n = Get<uint64_t>();
    if (pos_ + n > b_.size()) {
      ADD_FAILURE() << "string past the end at " << pos_;
      return {};
    }
    std::string s = b_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  size_t pos() const { return pos_; }

 private:
  const std::string& b_;
  size_t pos_ = 0;
};

// Fills tensor i with bytes (i * 16 + j) & 0xFF, in two calls to exercise streaming.
Status PatternFill(const std::vector<uint64_t>& sizes, size_t i, ByteSink& sink) {
  std::string b(sizes[i], '\0');
  for (size_t j = 0; j < b.size(); ++j) b[j] = static_cast<char>((i * 16 + j) & 0xFF);
  const size_t half = b.size() / 2;
  G4_RETURN_IF_ERROR(sink.Write(b.data(), half));
  return sink.Write(b.data() + half, b.size() - half);
}

TEST(GgufWriterTest, WritesEveryValueTypeAndTensorLayout) {
  loader_test::ScopedTempDir dir;
  GgufMetadata md;
  md.SetString("general.architecture", "gemma4");
  md.SetU8("t.u8", 200);
  md.SetI8("t.i8", -5);
  md.SetU16("t.u16", 60000);
  md.SetI16("t.i16", -300);
  md.SetU32("t.u32", 4000000000u);
  md.SetI32("t.i32", -7);
  md.SetU64("t.u64", 1ull << 40);
  md.SetI64("t.i64", -(1ll << 40));
  md.SetF32("t.f32", 1.5f);
  md.SetF64("t.f64", -2.25);
  md.SetBool("t.bool", true);
  const std::vector<int32_t> i32s = {1, -2, 3};
  md.SetI32Array("t.i32s", i32s);
  md.SetBoolArray("t.bools", {true, false, true});
  const std::vector<std::string> strs = {"a b", "", "▁x"};
  md.SetStringArray("t.strs", strs);
  md.SetU32("general.alignment", 64);
  ASSERT_TRUE(md.error().ok());
  EXPECT_EQ(md.count(), 16u);

  // Q8_0 [3, 64]: 3 rows of 2 blocks of 34 bytes; F32 [5]; F16 [2, 3, 1].
  const std::vector<GgufTensorSpec> specs = {
      {"blk.0.w", {3, 64}, static_cast<uint32_t>(gguf::GgmlType::kQ8_0)},
      {"norm", {5}, static_cast<uint32_t>(gguf::GgmlType::kF32)},
      {"x", {2, 3, 1}, static_cast<uint32_t>(gguf::GgmlType::kF16)},
  };
  const std::vector<uint64_t> sizes = {3 * 2 * 34, 20, 12};
  const std::string path = dir.File("t.gguf");
  ASSERT_TRUE(WriteGguf(path, md, specs, [&](size_t i, ByteSink& s) {
                return PatternFill(sizes, i, s);
              }).ok());
  EXPECT_FALSE(std::filesystem::exists(path + ".partial"));

  const std::string b = ReadAll(path);
  Cursor c(b);
  EXPECT_EQ(c.Get<uint32_t>(), 0x46554747u);
  EXPECT_EQ(b.substr(0, 4), "GGUF");
  EXPECT_EQ(c.Get<uint32_t>(), 3u);
  EXPECT_EQ(c.Get<uint64_t>(), 3u);
  EXPECT_EQ(c.Get<uint64_t>(), 16u);
  auto key = [&](const char* k, gguf::ValueType t) {
    EXPECT_EQ(c.Str(), k);
    EXPECT_EQ(c.Get<uint32_t>(), static_cast<uint32_t>(t)) << k;
  };
  using VT = gguf::ValueType;
  key("general.architecture", VT::kString);
  EXPECT_EQ(c.Str(), "gemma4");
  key("t.u8", VT::kU8);
  EXPECT_EQ(c.Get<uint8_t>(), 200);
  key("t.i8", VT::kI8);
  EXPECT_EQ(c.Get<int8_t>(), -5);
  key("t.u16", VT::kU16);
  EXPECT_EQ(c.Get<uint16_t>(), 60000);
  key("t.i16", VT::kI16);
  EXPECT_EQ(c.Get<int16_t>(), -300);
  key("t.u32", VT::kU32);
  EXPECT_EQ(c.Get<uint32_t>(), 4000000000u);
  key("t.i32", VT::kI32);
  EXPECT_EQ(c.Get<int32_t>(), -7);
  key("t.u64", VT::kU64);
  EXPECT_EQ(c.Get<uint64_t>(), 1ull << 40);
  key("t.i64", VT::kI64);
  EXPECT_EQ(c.Get<int64_t>(), -(1ll << 40));
  key("t.f32", VT::kF32);
  EXPECT_EQ(c.Get<float>(), 1.5f);
  key("t.f64", VT::kF64);
  EXPECT_EQ(c.Get<double>(), -2.25);
  key("t.bool", VT::kBool);
  EXPECT_EQ(c.Get<uint8_t>(), 1);
  key("t.i32s", VT::kArray);
  EXPECT_EQ(c.Get<uint32_t>(), static_cast<uint32_t>(VT::kI32));
  EXPECT_EQ(c.Get<uint64_t>(), 3u);
  EXPECT_EQ(c.Get<int32_t>(), 1);
  EXPECT_EQ(c.Get<int32_t>(), -2);
  EXPECT_EQ(c.Get<int32_t>(), 3);
  key("t.bools", VT::kArray);
  EXPECT_EQ(c.Get<uint32_t>(), static_cast<uint32_t>(VT::kBool));
  EXPECT_EQ(c.Get<uint64_t>(), 3u);
  EXPECT_EQ(c.Get<uint8_t>(), 1);
  EXPECT_EQ(c.Get<uint8_t>(), 0);
  EXPECT_EQ(c.Get<uint8_t>(), 1);
  key("t.strs", VT::kArray);
  EXPECT_EQ(c.Get<uint32_t>(), static_cast<uint32_t>(VT::kString));
  EXPECT_EQ(c.Get<uint64_t>(), 3u);
  EXPECT_EQ(c.Str(), "a b");
  EXPECT_EQ(c.Str(), "");
  EXPECT_EQ(c.Str(), "▁x");
  key("general.alignment", VT::kU32);
  EXPECT_EQ(c.Get<uint32_t>(), 64u);

  // Tensor infos: ne reversed from the PyTorch shape, offsets aligned to 64.
  const std::vector<std::vector<uint64_t>> ne = {{64, 3}, {5}, {1, 3, 2}};
  const std::vector<uint64_t> offsets = {0, 256, 320};  // 204 -> 256, 256 + 20 -> 320
  for (size_t i = 0; i < specs.size(); ++i) {
    EXPECT_EQ(c.Str(), specs[i].name);
    ASSERT_EQ(c.Get<uint32_t>(), ne[i].size());
    for (uint64_t d : ne[i]) EXPECT_EQ(c.Get<uint64_t>(), d) << specs[i].name;
    EXPECT_EQ(c.Get<uint32_t>(), specs[i].ggml_type);
    EXPECT_EQ(c.Get<uint64_t>(), offsets[i]);
  }
  const size_t data_start = (c.pos() + 63) / 64 * 64;
  for (size_t p = c.pos(); p < data_start; ++p) EXPECT_EQ(b[p], '\0') << "header padding at " << p;
  ASSERT_EQ(b.size(), data_start + 320 + 64);  // the last tensor is padded too
  for (size_t i = 0; i < specs.size(); ++i) {
    for (uint64_t j = 0; j < sizes[i]; ++j) {
      ASSERT_EQ(static_cast<uint8_t>(b[data_start + offsets[i] + j]), (i * 16 + j) & 0xFF)
          << specs[i].name << " byte " << j;
    }
  }
  for (size_t p = data_start + sizes[0]; p < data_start + offsets[1]; ++p) {
    ASSERT_EQ(b[p], '\0') << "tensor padding at " << p;
  }
}

TEST(GgufWriterTest, ReaderReadsBackWhatWasWritten) {
  loader_test::ScopedTempDir dir;
  GgufMetadata md;
  md.SetString("general.architecture", "gemma4");
  md.SetI8("t.i8", -5);
  md.SetU16("t.u16", 60000);
  md.SetI64("t.i64", -(1ll << 40));
  md.SetF64("t.f64", -2.25);
  md.SetF32("t.f32", 0.5f);
  md.SetBool("t.bool", false);
  const std::vector<uint32_t> u32s = {7, 8};
  md.SetU32Array("t.u32s", u32s);
  const std::vector<float> f32s = {1.5f, -3.0f};
  md.SetF32Array("t.f32s", f32s);
  md.SetBoolArray("t.bools", {false, true});
  const std::vector<std::string_view> strs = {"left right", "<0x0A>"};
  md.SetStringArray("t.strs", strs);
  const std::vector<GgufTensorSpec> specs = {
      {"w", {3, 64}, static_cast<uint32_t>(gguf::GgmlType::kQ4_0)},
      {"b", {2, 5}, static_cast<uint32_t>(gguf::GgmlType::kF32)},
  };
  const std::vector<uint64_t> sizes = {3 * 2 * 18, 40};
  const std::string path = dir.File("rt.gguf");
  ASSERT_TRUE(WriteGguf(path, md, specs, [&](size_t i, ByteSink& s) {
                return PatternFill(sizes, i, s);
              }).ok());
  auto f = GgufFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ((*f)->version(), 3u);
  EXPECT_EQ((*f)->metadata().size(), 11u);
  EXPECT_EQ(*(*f)->GetString("general.architecture"), "gemma4");
  EXPECT_EQ(*(*f)->GetInt("t.i8"), -5);
  EXPECT_EQ(*(*f)->GetInt("t.u16"), 60000);
  EXPECT_EQ(*(*f)->GetInt("t.i64"), -(1ll << 40));
  EXPECT_EQ(*(*f)->GetFloat("t.f64"), -2.25);
  EXPECT_EQ(*(*f)->GetFloat("t.f32"), 0.5);
  EXPECT_FALSE(*(*f)->GetBool("t.bool"));
  EXPECT_EQ(*(*f)->GetIntArray("t.u32s"), (std::vector<int64_t>{7, 8}));
  EXPECT_EQ(*(*f)->GetFloatArray("t.f32s"), (std::vector<double>{1.5, -3.0}));
  EXPECT_EQ(*(*f)->GetBoolArray("t.bools"), (std::vector<bool>{false, true}));
  EXPECT_EQ(*(*f)->GetStringArray("t.strs"), (std::vector<std::string>{"left right", "<0x0A>"}));
  ASSERT_EQ((*f)->tensors().size(), 2u);
  for (size_t i = 0; i < specs.size(); ++i) {
    const GgufTensorInfo* t = (*f)->Find(specs[i].name);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->shape, specs[i].shape);
    EXPECT_EQ(t->ggml_type, specs[i].ggml_type);
    EXPECT_EQ(t->nbytes, sizes[i]);
    const uint8_t* p = static_cast<const uint8_t*>(t->data);
    for (uint64_t j = 0; j < sizes[i]; ++j) ASSERT_EQ(p[j], (i * 16 + j) & 0xFF);
  }
  auto view = (*f)->Tensor("w");
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  EXPECT_EQ(view->quant.kind, QuantKind::kQ4_0);
  EXPECT_EQ(view->shape, (std::vector<int64_t>{3, 64}));
}

TEST(GgufWriterTest, DefaultAlignmentIs32AndNoTensorsIsValid) {
  loader_test::ScopedTempDir dir;
  GgufMetadata md;
  md.SetString("general.architecture", "gemma4");
  const std::string path = dir.File("empty.gguf");
  ASSERT_TRUE(WriteGguf(path, md, {}, nullptr).ok());
  const std::string b = ReadAll(path);
  // 24-byte header + key (8 + 20) + type 4 + string (8 + 6) = 70 -> padded to 96.
  EXPECT_EQ(b.size(), 96u);
  EXPECT_EQ(md.alignment(), 32u);
}

TEST(GgufWriterTest, RejectsBadMetadataAndSpecs) {
  loader_test::ScopedTempDir dir;
  const std::string path = dir.File("bad.gguf");
  {
    GgufMetadata md;
    md.SetU32("a.b", 1);
    md.SetF32("a.b", 2);
    const Status s = WriteGguf(path, md, {}, nullptr);
    EXPECT_THAT(s.message(), HasSubstr("'a.b' set twice"));
  }
  {
    GgufMetadata md;
    md.SetU32("general.alignment", 12);
    EXPECT_THAT(WriteGguf(path, md, {}, nullptr).message(), HasSubstr("general.alignment"));
  }
  GgufMetadata md;
  auto write = [&](std::vector<GgufTensorSpec> specs) {
    return WriteGguf(path, md, specs, [](size_t, ByteSink&) { return Status::Ok(); });
  };
  EXPECT_THAT(write({{"w", {4, 33}, 2}}).message(), HasSubstr("not a multiple of Q4_0's block"));
  EXPECT_THAT(write({{"w", {4, 32}, 4}}).message(), HasSubstr("unknown ggml type 4"));
  EXPECT_THAT(write({{"w", {1, 1, 1, 1, 1}, 0}}).message(), HasSubstr("5 dimensions"));
  EXPECT_THAT(write({{"w", {0}, 0}}).message(), HasSubstr("non-positive"));
  EXPECT_THAT(write({{"w", {1}, 0}, {"w", {1}, 0}}).message(), HasSubstr("duplicate tensor name"));
  EXPECT_THAT(write({{std::string(65, 'n'), {1}, 0}}).message(), HasSubstr("over 64 bytes"));
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(GgufWriterTest, FillMustWriteExactlyTheTensorBytes) {
  loader_test::ScopedTempDir dir;
  const std::string path = dir.File("short.gguf");
  GgufMetadata md;
  const std::vector<GgufTensorSpec> specs = {{"w", {2, 32}, 8}};  // Q8_0: 68 bytes
  const std::string b(100, 'x');
  Status s = WriteGguf(path, md, specs, [&](size_t, ByteSink& k) { return k.Write(b.data(), 67); });
  EXPECT_THAT(s.message(), HasSubstr("fill wrote 67 of 68 bytes"));
  EXPECT_THAT(s.message(), HasSubstr("'w'"));
  s = WriteGguf(path, md, specs, [&](size_t, ByteSink& k) { return k.Write(b.data(), 69); });
  EXPECT_THAT(s.message(), HasSubstr("more than the tensor's 68 bytes"));
  s = WriteGguf(path, md, specs, [&](size_t, ByteSink&) { return DataLoss("source gone"); });
  EXPECT_THAT(s.message(), HasSubstr("source gone"));
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(path + ".partial"));
}

TEST(GgufWriterTest, TensorBytesFollowTheBlockTable) {
  EXPECT_EQ(*GgufTensorBytes({"a", {7, 256}, 14}), 7u * 210);  // Q6_K
  EXPECT_EQ(*GgufTensorBytes({"a", {3, 512}, 12}), 3u * 2 * 144);  // Q4_K
  EXPECT_EQ(*GgufTensorBytes({"a", {3, 64}, 2}), 3u * 2 * 18);  // Q4_0
  EXPECT_EQ(*GgufTensorBytes({"a", {5, 3}, 30}), 30u);  // BF16
}

}  // namespace
}  // namespace g4
