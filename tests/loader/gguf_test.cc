// GgufFile on files written byte by byte: a valid file's metadata and tensor views, and every
// malformed header the reader must refuse with a clear error (and without allocating by an
// untrusted count).
#include "loader/gguf.h"

#include <cstring>
#include <fstream>

#include <gtest/gtest.h>

#include "loader/loader_test_util.h"

namespace g4 {
namespace {

using loader_test::ScopedTempDir;

// Little-endian GGUF bytes, with tensor data appended after the (aligned) header.
class Bytes {
 public:
  Bytes& U8(uint8_t v) { return Raw(&v, 1); }
  Bytes& U32(uint32_t v) { return Raw(&v, 4); }
  Bytes& U64(uint64_t v) { return Raw(&v, 8); }
  Bytes& F32(float v) { return Raw(&v, 4); }
  Bytes& Str(std::string_view s) {
    U64(s.size());
    return Raw(s.data(), s.size());
  }
  Bytes& Raw(const void* p, size_t n) {
    b_.append(static_cast<const char*>(p), n);
    return *this;
  }
  Bytes& Header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    return U32(gguf::kMagic).U32(version).U64(n_tensors).U64(n_kv);
  }
  // A key/value of type u32 / string.
  Bytes& KvU32(std::string_view key, uint32_t v) { return Str(key).U32(4).U32(v); }
  Bytes& KvStr(std::string_view key, std::string_view v) { return Str(key).U32(8).Str(v); }
  // A tensor info.
  Bytes& Tensor(std::string_view name, std::vector<uint64_t> ne, uint32_t type,
                uint64_t offset) {
    Str(name).U32(static_cast<uint32_t>(ne.size()));
    for (uint64_t d : ne) U64(d);
    return U32(type).U64(offset);
  }
  Bytes& Align(size_t a = 32) {
    while (b_.size() % a) b_.push_back('\0');
    return *this;
  }
  Bytes& Zeros(size_t n) {
    b_.append(n, '\0');
    return *this;
  }
  const std::string& str() const { return b_; }

 private:
  std::string b_;
};

class GgufTest : public ::testing::Test {
 protected:
  std::string Write(const Bytes& b, const std::string& name = "t.gguf") {
    const std::string path = dir_.File(name);
    std::ofstream(path, std::ios::binary) << b.str();
    return path;
  }
  Status OpenStatus(const Bytes& b) { return GgufFile::Open(Write(b)).status(); }
  // The message must mention every fragment.
  void ExpectError(const Bytes& b, StatusCode code, std::vector<std::string> fragments) {
    // No timing here (timed tests flake on shared machines): the fuzz harness's
    // -malloc_limit_mb is what catches an allocation sized by an untrusted count.
    Status s = OpenStatus(b);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.code(), code) << s.ToString();
    EXPECT_NE(s.message().find("t.gguf"), std::string::npos) << "names the file: " << s.message();
    for (const std::string& f : fragments) {
      EXPECT_NE(s.message().find(f), std::string::npos) << "'" << f << "' in " << s.message();
    }
  }

  ScopedTempDir dir_;
};

// Two tensors: F32 [3, 2] (ne [2, 3]) and Q8_0 [2, 32], plus typed metadata.
Bytes ValidFile() {
  Bytes b;
  b.Header(2, 6);
  b.KvStr("general.architecture", "gemma4");
  b.KvU32("gemma4.block_count", 35);
  b.Str("gemma4.rope.freq_base").U32(6).F32(1e6f);
  b.Str("flag").U32(7).U8(1);
  b.Str("ff").U32(9).U32(5).U64(3).U32(6144).U32(6144).U32(12288);  // i32 array
  b.Str("toks").U32(9).U32(8).U64(2).Str("<pad>").Str("<eos>");
  b.Tensor("a.weight", {2, 3}, 0, 0);
  b.Tensor("q.weight", {32, 2}, 8, 32);
  b.Align();
  for (int i = 0; i < 6; ++i) b.F32(static_cast<float>(i) + 0.5f);
  b.Align();
  for (int r = 0; r < 2; ++r) {  // Q8_0: half d = 0.5, qs = r + 1 ... r + 32
    const uint16_t half = 0x3800;
    b.Raw(&half, 2);
    for (int j = 0; j < 32; ++j) b.U8(static_cast<uint8_t>(r + 1 + j));
  }
  return b;
}

TEST_F(GgufTest, ReadsMetadataAndTensors) {
  auto f = GgufFile::Open(Write(ValidFile()));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ((*f)->version(), 3u);
  EXPECT_EQ(*(*f)->GetString("general.architecture"), "gemma4");
  EXPECT_EQ(*(*f)->GetInt("gemma4.block_count"), 35);
  EXPECT_FLOAT_EQ(static_cast<float>(*(*f)->GetFloat("gemma4.rope.freq_base")), 1e6f);
  EXPECT_TRUE(*(*f)->GetBool("flag"));
  EXPECT_EQ(*(*f)->GetIntArray("ff"), (std::vector<int64_t>{6144, 6144, 12288}));
  EXPECT_EQ(*(*f)->GetStringArray("toks"), (std::vector<std::string>{"<pad>", "<eos>"}));

  auto wrong = (*f)->GetString("gemma4.block_count");
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("'gemma4.block_count' has type u32; expected string"),
            std::string::npos) << wrong.status().message();
  auto arr = (*f)->GetBoolArray("ff");
  EXPECT_NE(arr.status().message().find("array of i32; expected an array of bool"),
            std::string::npos) << arr.status().message();
  EXPECT_EQ((*f)->GetInt("nope").status().code(), StatusCode::kNotFound);

  auto a = (*f)->Tensor("a.weight");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->shape, (std::vector<int64_t>{3, 2}));  // ne reversed
  EXPECT_EQ(a->dtype, DType::kF32);
  EXPECT_FLOAT_EQ(a->at(5), 5.5f);

  auto q = (*f)->Tensor("q.weight");
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_EQ(q->shape, (std::vector<int64_t>{2, 32}));
  EXPECT_EQ(q->quant.kind, QuantKind::kQ8_0);
  EXPECT_EQ(q->quant.row_bytes, 34);
  EXPECT_EQ(q->quant.scales, nullptr);
  EXPECT_FLOAT_EQ(q->at(32 + 3), 0.5f * 5);  // row 1, element 3: q = 1 + 1 + 3
  EXPECT_EQ((*f)->Tensor("b").status().code(), StatusCode::kNotFound);
}

TEST_F(GgufTest, HasMagic) {
  EXPECT_TRUE(GgufFile::HasMagic(Write(ValidFile())));
  Bytes b;
  b.U32(0x12345678);
  EXPECT_FALSE(GgufFile::HasMagic(Write(b, "x.bin")));
  EXPECT_FALSE(GgufFile::HasMagic(dir_.File("absent")));
}

TEST_F(GgufTest, VersionTwoIsRead) {
  Bytes b;
  b.Header(0, 1, 2).KvU32("k", 1);
  EXPECT_TRUE(OpenStatus(b).ok());
}

TEST_F(GgufTest, BadMagic) {
  Bytes b;
  b.U32(0x46554746).U32(3).U64(0).U64(0);
  ExpectError(b, StatusCode::kInvalidArgument, {"not a GGUF file", "0x46554746"});
}

TEST_F(GgufTest, VersionOneAndFour) {
  Bytes v1, v4;
  v1.Header(0, 0, 1);
  v4.Header(0, 0, 4);
  ExpectError(v1, StatusCode::kInvalidArgument, {"version 1"});
  ExpectError(v4, StatusCode::kInvalidArgument, {"version 4"});
}

TEST_F(GgufTest, TruncatedHeader) {
  Bytes b;
  b.U32(gguf::kMagic).U32(3).U32(0);
  ExpectError(b, StatusCode::kDataLoss, {"truncated", "tensor count"});
  Bytes kv;
  kv.Header(0, 1).Str("key").U32(4).U8(1);  // u32 value cut short
  ExpectError(kv, StatusCode::kDataLoss, {"truncated", "'key'"});
}

TEST_F(GgufTest, TruncatedData) {
  Bytes b = ValidFile();
  std::string s = b.str();
  s.resize(s.size() - 10);
  Bytes cut;
  cut.Raw(s.data(), s.size());
  ExpectError(cut, StatusCode::kDataLoss, {"'q.weight'", "past the end of the file"});
}

TEST_F(GgufTest, TensorPastEndOfFile) {
  Bytes b;
  b.Header(1, 0).Tensor("w", {4}, 0, 1 << 20).Align().Zeros(16);
  ExpectError(b, StatusCode::kDataLoss, {"'w'", "past the end"});
}

TEST_F(GgufTest, AbsurdCountsAndLengths) {
  Bytes kv, tensors, str, arr, key;
  kv.Header(0, uint64_t{1} << 62);
  ExpectError(kv, StatusCode::kDataLoss, {"key/value count"});
  tensors.Header(uint64_t{1} << 61, 0);
  ExpectError(tensors, StatusCode::kDataLoss, {"tensor count"});
  str.Header(0, 1).Str("k").U32(8).U64(uint64_t{1} << 60);
  ExpectError(str, StatusCode::kDataLoss, {"'k'", "string value"});
  arr.Header(0, 1).Str("k").U32(9).U32(8).U64(~uint64_t{0});
  ExpectError(arr, StatusCode::kDataLoss, {"'k'", "array of"});
  key.Header(0, 1).U64(~uint64_t{0} - 3).Zeros(16);
  ExpectError(key, StatusCode::kDataLoss, {"metadata key"});
}

TEST_F(GgufTest, BadValueTypesAndNesting) {
  Bytes type, nested, boolean;
  type.Header(0, 1).Str("k").U32(13).U32(0);
  ExpectError(type, StatusCode::kInvalidArgument, {"'k'", "value type", "13"});
  nested.Header(0, 1).Str("deep").U32(9);  // an array of arrays of ... 13 levels deep
  for (int i = 0; i < 12; ++i) nested.U32(9).U64(1);
  nested.U32(4).U64(0);
  ExpectError(nested, StatusCode::kInvalidArgument, {"'deep'", "nested deeper"});
  boolean.Header(0, 1).Str("b").U32(7).U8(2);
  ExpectError(boolean, StatusCode::kInvalidArgument, {"'b'", "expected 0 or 1"});
}

TEST_F(GgufTest, NestedArraysWithinTheLimitAreRead) {
  Bytes b;
  b.Header(0, 1).Str("nested").U32(9).U32(9).U64(2);
  b.U32(4).U64(1).U32(7);
  b.U32(4).U64(0);
  auto f = GgufFile::Open(Write(b));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ((*f)->FindValue("nested")->count, 2u);
  EXPECT_FALSE((*f)->GetIntArray("nested").ok());
}

TEST_F(GgufTest, UnknownAndUnsupportedTypes) {
  Bytes unknown;
  unknown.Header(1, 0).Tensor("w", {32}, 99, 0).Align().Zeros(64);
  ExpectError(unknown, StatusCode::kUnimplemented, {"'w'", "unknown ggml type id 99"});
  // Q2_K (256 elements, 84 bytes) validates but has no kernels: Unimplemented on use.
  Bytes q2k;
  q2k.Header(1, 0).Tensor("blk.0.ffn_up.weight", {256}, 10, 0).Align().Zeros(84);
  auto f = GgufFile::Open(Write(q2k));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  auto t = (*f)->Tensor("blk.0.ffn_up.weight");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(t.status().message().find("'blk.0.ffn_up.weight' has ggml type Q2_K"),
            std::string::npos) << t.status().message();
}

TEST_F(GgufTest, RowNotAMultipleOfTheBlock) {
  Bytes b;
  b.Header(1, 0).Tensor("w", {48, 2}, 2, 0).Align().Zeros(64);  // Q4_0 blocks of 32
  ExpectError(b, StatusCode::kInvalidArgument, {"'w'", "ne[0] = 48", "block size 32"});
}

TEST_F(GgufTest, TooManyDimsAndZeroDims) {
  Bytes five, zero, empty;
  five.Header(1, 0).Tensor("w", {1, 1, 1, 1, 1}, 0, 0).Align().Zeros(4);
  ExpectError(five, StatusCode::kInvalidArgument, {"'w'", "n_dims 5"});
  zero.Header(1, 0).Tensor("w", {4, 0}, 0, 0).Align().Zeros(16);
  ExpectError(zero, StatusCode::kInvalidArgument, {"'w'", "ne[1] = 0"});
  empty.Header(1, 0).Tensor("w", {uint64_t{1} << 30, uint64_t{1} << 30, 4}, 0, 0).Align();
  ExpectError(empty, StatusCode::kInvalidArgument, {"'w'", "overflows"});
}

TEST_F(GgufTest, MisalignedOffset) {
  Bytes b;
  b.Header(1, 0).Tensor("w", {4}, 0, 8).Align().Zeros(64);
  ExpectError(b, StatusCode::kInvalidArgument, {"'w'", "offset 8", "alignment 32"});
}

TEST_F(GgufTest, AlignmentKey) {
  Bytes ok, bad;
  ok.Header(1, 1).KvU32("general.alignment", 8).Tensor("w", {4}, 0, 8).Align(8).Zeros(32);
  auto f = GgufFile::Open(Write(ok));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ((*f)->alignment(), 8u);
  bad.Header(0, 1).KvU32("general.alignment", 12);
  ExpectError(bad, StatusCode::kInvalidArgument, {"general.alignment = 12", "power of two"});
}

TEST_F(GgufTest, OverlappingTensors) {
  Bytes b;
  b.Header(2, 0).Tensor("a", {16}, 0, 0).Tensor("b", {16}, 0, 32).Align().Zeros(128);
  ExpectError(b, StatusCode::kInvalidArgument, {"'a'", "'b'", "overlap"});
}

TEST_F(GgufTest, DuplicateNames) {
  Bytes kv, t;
  kv.Header(0, 2).KvU32("k", 1).KvU32("k", 2);
  ExpectError(kv, StatusCode::kInvalidArgument, {"'k'", "twice"});
  t.Header(2, 0).Tensor("w", {8}, 0, 0).Tensor("w", {8}, 0, 32).Align().Zeros(64);
  ExpectError(t, StatusCode::kInvalidArgument, {"'w'", "twice"});
}

}  // namespace
}  // namespace g4
