// core/gguf_blocks: hand-built blocks with values worked out from the format text, the K-quant
// scale rule (j >= 4 takes the min's high bits from scales[j]), TensorView::at on a GGUF view,
// and every kind against the PyPI `gguf` package's dequantization of random blocks
// (tests/data/gguf_blocks, made by scripts/make_gguf_block_fixture.py).
#include "core/gguf_blocks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/tensor.h"

namespace g4 {
namespace {

void PutHalf(float v, uint8_t* p) {
  const uint16_t bits = F32ToF16(v);
  std::memcpy(p, &bits, 2);
}

std::vector<float> Dequant(QuantKind kind, const std::vector<uint8_t>& block) {
  std::vector<float> y(static_cast<size_t>(GgufBlockFormat(kind).elems), -999.0f);
  DequantizeGgufBlock(kind, block.data(), y.data());
  return y;
}

TEST(GgufBlocksTest, Q4_0LowNibblesAreTheFirstHalf) {
  std::vector<uint8_t> b(18);
  PutHalf(0.5f, b.data());
  for (int j = 0; j < 16; ++j) b[2 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  const std::vector<float> y = Dequant(QuantKind::kQ4_0, b);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 0.5f * (j - 8)) << j;
    EXPECT_EQ(y[j + 16], 0.5f * (15 - j - 8)) << j;
  }
}

TEST(GgufBlocksTest, Q4_1AddsTheMin) {
  std::vector<uint8_t> b(20);
  PutHalf(0.25f, b.data());
  PutHalf(-1.0f, b.data() + 2);
  for (int j = 0; j < 16; ++j) b[4 + j] = static_cast<uint8_t>(j | (3 << 4));
  const std::vector<float> y = Dequant(QuantKind::kQ4_1, b);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 0.25f * j - 1.0f) << j;
    EXPECT_EQ(y[j + 16], 0.25f * 3 - 1.0f) << j;
  }
}

TEST(GgufBlocksTest, Q5_0FifthBitIsBitJOfLittleEndianQh) {
  std::vector<uint8_t> b(22);
  PutHalf(2.0f, b.data());
  const uint32_t qh = 0x80000001u | (1u << 17);  // elements 0, 17 and 31 get +16
  std::memcpy(b.data() + 2, &qh, 4);
  for (int j = 0; j < 16; ++j) b[6 + j] = 0x55;  // nibble 5 everywhere
  const std::vector<float> y = Dequant(QuantKind::kQ5_0, b);
  for (int j = 0; j < 32; ++j) {
    const int q = 5 + ((j == 0 || j == 17 || j == 31) ? 16 : 0);
    EXPECT_EQ(y[j], 2.0f * (q - 16)) << j;
  }
}

TEST(GgufBlocksTest, Q5_1FifthBitAndMin) {
  std::vector<uint8_t> b(24);
  PutHalf(1.0f, b.data());
  PutHalf(0.5f, b.data() + 2);
  const uint32_t qh = 1u << 16;  // element 16 (the high nibble of qs[0])
  std::memcpy(b.data() + 4, &qh, 4);
  for (int j = 0; j < 16; ++j) b[8 + j] = static_cast<uint8_t>(0x21);  // low 1, high 2
  const std::vector<float> y = Dequant(QuantKind::kQ5_1, b);
  for (int j = 0; j < 16; ++j) EXPECT_EQ(y[j], 1.0f * 1 + 0.5f) << j;
  EXPECT_EQ(y[16], 1.0f * (2 + 16) + 0.5f);
  for (int j = 17; j < 32; ++j) EXPECT_EQ(y[j], 1.0f * 2 + 0.5f) << j;
}

TEST(GgufBlocksTest, Q8_0IsSignedBytes) {
  std::vector<uint8_t> b(34);
  PutHalf(0.125f, b.data());
  for (int j = 0; j < 32; ++j) b[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(j * 8 - 128));
  const std::vector<float> y = Dequant(QuantKind::kQ8_0, b);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], 0.125f * (j * 8 - 128)) << j;
}

TEST(GgufBlocksTest, KScaleRule) {
  // Sub-block j's scale and min are 6 bits: j < 4 from the low 6 bits of bytes j and j + 4;
  // j >= 4 from the nibbles of byte j + 4 plus the top 2 bits of bytes j - 4 (scale) and j (min).
  uint8_t s[12] = {};
  s[0] = 0x40 | 7;   // sc(0) = 7, top bits 01 -> sc(4) high = 1
  s[4] = 0x80 | 9;   // m(0) = 9, top bits 10 -> m(4) high = 2
  s[8] = 0x53;       // sc(4) low = 3, m(4) low = 5
  s[3] = 0xC0 | 63;  // sc(3) = 63, sc(7) high = 3
  s[7] = 0x00 | 1;   // m(3) = 1, m(7) high = 0
  s[11] = 0xF0;      // sc(7) low = 0, m(7) low = 15
  int sc, m;
  GgufScaleMinK4(s, 0, &sc, &m);
  EXPECT_EQ(sc, 7);
  EXPECT_EQ(m, 9);
  GgufScaleMinK4(s, 4, &sc, &m);
  EXPECT_EQ(sc, 3 | (1 << 4));
  EXPECT_EQ(m, 5 | (2 << 4));  // from s[4]'s top bits; s[0]'s would give 1
  GgufScaleMinK4(s, 3, &sc, &m);
  EXPECT_EQ(sc, 63);
  EXPECT_EQ(m, 1);
  GgufScaleMinK4(s, 7, &sc, &m);
  EXPECT_EQ(sc, 0 | (3 << 4));
  EXPECT_EQ(m, 15);
}

TEST(GgufBlocksTest, Q4_KChunksAndScales) {
  std::vector<uint8_t> b(144);
  PutHalf(0.5f, b.data());
  PutHalf(0.25f, b.data() + 2);
  uint8_t* s = b.data() + 4;
  // sc(j) = j + 1, m(j) = 2j (j < 4 plain; j >= 4 all fit in the low nibbles + 2 high bits).
  for (int j = 0; j < 4; ++j) {
    s[j] = static_cast<uint8_t>(j + 1);
    s[j + 4] = static_cast<uint8_t>(2 * j);
  }
  for (int j = 4; j < 8; ++j) {
    const int sc = j + 1 + 16, m = 2 * j + 32;  // exercise the high bits too
    s[j + 4] = static_cast<uint8_t>((sc & 0xF) | ((m & 0xF) << 4));
    s[j - 4] |= static_cast<uint8_t>((sc >> 4) << 6);
    s[j] |= static_cast<uint8_t>((m >> 4) << 6);
  }
  for (int i = 0; i < 128; ++i) b[16 + i] = static_cast<uint8_t>((i % 16) | ((15 - i % 16) << 4));
  const std::vector<float> y = Dequant(QuantKind::kQ4_K, b);
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 32; ++l) {
      for (int h = 0; h < 2; ++h) {
        const int j = 2 * c + h;
        const int sc = j < 4 ? j + 1 : j + 1 + 16, m = j < 4 ? 2 * j : 2 * j + 32;
        const int q = h == 0 ? (32 * c + l) % 16 : 15 - (32 * c + l) % 16;
        EXPECT_EQ(y[64 * c + 32 * h + l], 0.5f * sc * q - 0.25f * m) << c << " " << l << " " << h;
      }
    }
  }
}

TEST(GgufBlocksTest, Q5_KHighBitPlanes) {
  std::vector<uint8_t> b(176);
  PutHalf(1.0f, b.data());
  PutHalf(0.0f, b.data() + 2);
  for (int j = 0; j < 4; ++j) b[4 + j] = 1;  // sc = 1 for sub-blocks 0..3
  for (int j = 8; j < 12; ++j) b[4 + j] = 1;  // sc = 1 for 4..7 (low nibble), m = 0
  // qh[l] bit 2c -> low half of chunk c, bit 2c + 1 -> high half; set only for l = 3.
  b[16 + 3] = 0xFF;
  for (int i = 0; i < 128; ++i) b[48 + i] = 0x21;  // low nibble 1, high 2
  const std::vector<float> y = Dequant(QuantKind::kQ5_K, b);
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 32; ++l) {
      EXPECT_EQ(y[64 * c + l], 1 + (l == 3 ? 16 : 0)) << c << " " << l;
      EXPECT_EQ(y[64 * c + 32 + l], 2 + (l == 3 ? 16 : 0)) << c << " " << l;
    }
  }
}

TEST(GgufBlocksTest, Q6_KScaleOfEveryValueIsIndexOver16) {
  std::vector<uint8_t> b(210);
  PutHalf(0.5f, b.data() + 208);
  for (int s = 0; s < 16; ++s) b[192 + s] = static_cast<uint8_t>(static_cast<int8_t>(s - 8));
  // Every 6-bit value q = 33 (0x21): ql nibbles 1, qh 2-bit fields 2.
  for (int i = 0; i < 128; ++i) b[i] = 0x11;
  for (int i = 0; i < 64; ++i) b[128 + i] = 0xAA;
  const std::vector<float> y = Dequant(QuantKind::kQ6_K, b);
  for (int i = 0; i < 256; ++i) EXPECT_EQ(y[i], 0.5f * (i / 16 - 8) * (33 - 32)) << i;
  // One distinct value: element 128 + 64 + 5 (half 1, third quarter) = high nibble of ql[64 + 5]
  // and bits 4..5 of qh[32 + 5].
  b[64 + 5] = 0x01 | (0x7 << 4);
  b[128 + 32 + 5] = static_cast<uint8_t>(0xAA & ~0x30);  // bits 4..5 -> 0
  const std::vector<float> z = Dequant(QuantKind::kQ6_K, b);
  EXPECT_EQ(z[128 + 64 + 5], 0.5f * (196 / 16 - 8) * (7 - 32));
  EXPECT_EQ(z[128 + 5], y[128 + 5]);
}

TEST(GgufBlocksTest, TensorViewAtDequantizesTheBlock) {
  // [3, 64] Q8_0: row n, block b has d = n + b + 1 and q[j] = j - 16.
  std::vector<uint8_t> data(3 * 2 * 34);
  for (int n = 0; n < 3; ++n) {
    for (int blk = 0; blk < 2; ++blk) {
      uint8_t* p = data.data() + (n * 2 + blk) * 34;
      PutHalf(static_cast<float>(n + blk + 1), p);
      for (int j = 0; j < 32; ++j) p[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(j - 16));
    }
  }
  QuantInfo q;
  q.kind = QuantKind::kQ8_0;
  q.group_size = 32;
  q.row_bytes = 68;
  const TensorView v(data.data(), DType::kU8, {3, 64}, q);
  for (int64_t i = 0; i < 3 * 64; ++i) {
    const int64_t n = i / 64, k = i % 64;
    EXPECT_EQ(v.at(i), static_cast<float>((n + k / 32 + 1) * (k % 32 - 16))) << i;
  }
  EXPECT_EQ(StorageName(v), "q8_0");
}

// The gguf package's numpy dequantization of random blocks (fixture) equals ours.
class GgufFixtureTest : public ::testing::TestWithParam<QuantKind> {};

TEST_P(GgufFixtureTest, MatchesGgufPackage) {
  const QuantKind kind = GetParam();
  const std::string path =
      std::string(G4_SOURCE_DIR) + "/tests/data/gguf_blocks/" + QuantKindName(kind) + ".bin";
  std::ifstream f(path, std::ios::binary);
  ASSERT_TRUE(f) << path;
  uint32_t hdr[3];
  f.read(reinterpret_cast<char*>(hdr), sizeof(hdr));
  const BlockFormat fmt = GgufBlockFormat(kind);
  ASSERT_EQ(hdr[1], fmt.bytes);
  ASSERT_EQ(hdr[2], fmt.elems);
  const int64_t n = hdr[0];
  ASSERT_GT(n, 0);
  ASSERT_LE(n, 64);
  std::vector<uint8_t> blocks(static_cast<size_t>(n * fmt.bytes));
  std::vector<float> want(static_cast<size_t>(n * fmt.elems));
  f.read(reinterpret_cast<char*>(blocks.data()), static_cast<std::streamsize>(blocks.size()));
  f.read(reinterpret_cast<char*>(want.data()), static_cast<std::streamsize>(want.size() * 4));
  ASSERT_TRUE(f) << "truncated " << path;
  std::vector<float> got(want.size());
  DequantizeGgufRow(kind, blocks.data(), n * fmt.elems, got.data());  // n blocks as one row
  // Same f32 operations in the same order as ggml: bit-identical (all 6144 values were).
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i], want[i]) << QuantKindName(kind) << " " << i;
}

INSTANTIATE_TEST_SUITE_P(AllKinds, GgufFixtureTest,
                         ::testing::Values(QuantKind::kQ4_0, QuantKind::kQ4_1, QuantKind::kQ5_0,
                                           QuantKind::kQ5_1, QuantKind::kQ8_0, QuantKind::kQ4_K,
                                           QuantKind::kQ5_K, QuantKind::kQ6_K),
                         [](const ::testing::TestParamInfo<QuantKind>& i) {
                           return std::string(QuantKindName(i.param));
                         });

}  // namespace
}  // namespace g4
