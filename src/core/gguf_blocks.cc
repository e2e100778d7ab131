// Scalar GGUF block dequantization (see gguf_blocks.h): plain code that follows the format text
// line by line; speed is the kernels' job (src/kernels/cpu/matmul_gguf.cc).
#include "core/gguf_blocks.h"

#include <cstring>

#include "core/dtype.h"

namespace g4 {

float GgufHalf(const uint8_t* p) {
  uint16_t bits;
  std::memcpy(&bits, p, 2);  // little-endian hosts only, as everywhere in g4
  return F16ToF32(bits);
}

namespace {

// Q4_0: half d; u8 qs[16]. y[j] = d * ((qs[j] & 0xF) - 8), y[j + 16] = d * ((qs[j] >> 4) - 8).
void Q4_0(const uint8_t* b, float* y) {
  const float d = GgufHalf(b);
  const uint8_t* qs = b + 2;
  for (int j = 0; j < 16; ++j) {
    y[j] = d * static_cast<float>((qs[j] & 0xF) - 8);
    y[j + 16] = d * static_cast<float>((qs[j] >> 4) - 8);
  }
}

// Q4_1: half d; half m; u8 qs[16]. y = d * q + m, q the nibble (low nibbles first half).
void Q4_1(const uint8_t* b, float* y) {
  const float d = GgufHalf(b), m = GgufHalf(b + 2);
  const uint8_t* qs = b + 4;
  for (int j = 0; j < 16; ++j) {
    y[j] = d * static_cast<float>(qs[j] & 0xF) + m;
    y[j + 16] = d * static_cast<float>(qs[j] >> 4) + m;
  }
}

// The 5-bit values of a Q5_0 / Q5_1 block: nibble as Q4_0, 5th bit of element j = bit j of qh
// read as a little-endian u32.
void Q5Values(const uint8_t* qh_bytes, const uint8_t* qs, int* q) {
  uint32_t qh;
  std::memcpy(&qh, qh_bytes, 4);
  for (int j = 0; j < 16; ++j) {
    q[j] = (qs[j] & 0xF) | static_cast<int>(((qh >> j) & 1u) << 4);
    q[j + 16] = (qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
  }
}

// Q5_0: half d; u8 qh[4]; u8 qs[16]. y = d * (q - 16).
void Q5_0(const uint8_t* b, float* y) {
  const float d = GgufHalf(b);
  int q[32];
  Q5Values(b + 2, b + 6, q);
  for (int j = 0; j < 32; ++j) y[j] = d * static_cast<float>(q[j] - 16);
}

// Q5_1: half d; half m; u8 qh[4]; u8 qs[16]. y = d * q + m.
void Q5_1(const uint8_t* b, float* y) {
  const float d = GgufHalf(b), m = GgufHalf(b + 2);
  int q[32];
  Q5Values(b + 4, b + 8, q);
  for (int j = 0; j < 32; ++j) y[j] = d * static_cast<float>(q[j]) + m;
}

// Q8_0: half d; i8 qs[32]. y = d * q.
void Q8_0(const uint8_t* b, float* y) {
  const float d = GgufHalf(b);
  for (int j = 0; j < 32; ++j) y[j] = d * static_cast<float>(static_cast<int8_t>(b[2 + j]));
}

// Q4_K: half d; half dmin; u8 scales[12]; u8 qs[128]. Chunk c (64 values) reads qs[32c ..]:
// low nibbles are sub-block 2c, high nibbles sub-block 2c + 1; y = d*sc * q - dmin*m.
void Q4_K(const uint8_t* b, float* y) {
  const float d = GgufHalf(b), dmin = GgufHalf(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* qs = b + 16;
  for (int c = 0; c < 4; ++c) {
    int sc0, m0, sc1, m1;
    GgufScaleMinK4(scales, 2 * c, &sc0, &m0);
    GgufScaleMinK4(scales, 2 * c + 1, &sc1, &m1);
    const float d0 = d * static_cast<float>(sc0), min0 = dmin * static_cast<float>(m0);
    const float d1 = d * static_cast<float>(sc1), min1 = dmin * static_cast<float>(m1);
    const uint8_t* q = qs + 32 * c;
    for (int l = 0; l < 32; ++l) {
      y[64 * c + l] = d0 * static_cast<float>(q[l] & 0xF) - min0;
      y[64 * c + 32 + l] = d1 * static_cast<float>(q[l] >> 4) - min1;
    }
  }
}

// Q5_K: half d; half dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]. As Q4_K, plus a 5th bit:
// for chunk c, bit 2c of qh[l] tops the low nibble of qs[32c + l] and bit 2c + 1 the high one.
void Q5_K(const uint8_t* b, float* y) {
  const float d = GgufHalf(b), dmin = GgufHalf(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* qh = b + 16;
  const uint8_t* qs = b + 48;
  for (int c = 0; c < 4; ++c) {
    int sc0, m0, sc1, m1;
    GgufScaleMinK4(scales, 2 * c, &sc0, &m0);
    GgufScaleMinK4(scales, 2 * c + 1, &sc1, &m1);
    const float d0 = d * static_cast<float>(sc0), min0 = dmin * static_cast<float>(m0);
    const float d1 = d * static_cast<float>(sc1), min1 = dmin * static_cast<float>(m1);
    const uint8_t* q = qs + 32 * c;
    for (int l = 0; l < 32; ++l) {
      const int lo = (q[l] & 0xF) | (((qh[l] >> (2 * c)) & 1) << 4);
      const int hi = (q[l] >> 4) | (((qh[l] >> (2 * c + 1)) & 1) << 4);
      y[64 * c + l] = d0 * static_cast<float>(lo) - min0;
      y[64 * c + 32 + l] = d1 * static_cast<float>(hi) - min1;
    }
  }
}

// Q6_K: u8 ql[128]; u8 qh[64]; i8 scales[16]; half d (last). Halves h = 0, 1 of 128 values;
// value i of the block uses scale i / 16.
void Q6_K(const uint8_t* b, float* y) {
  const float d = GgufHalf(b + 208);
  for (int h = 0; h < 2; ++h) {
    const uint8_t* ql = b + 64 * h;
    const uint8_t* qh = b + 128 + 32 * h;
    const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192) + 8 * h;
    float* yh = y + 128 * h;
    for (int l = 0; l < 32; ++l) {
      const int s = l / 16;
      const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
      const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
      const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      yh[l] = d * static_cast<float>(sc[s + 0]) * static_cast<float>(q1);
      yh[l + 32] = d * static_cast<float>(sc[s + 2]) * static_cast<float>(q2);
      yh[l + 64] = d * static_cast<float>(sc[s + 4]) * static_cast<float>(q3);
      yh[l + 96] = d * static_cast<float>(sc[s + 6]) * static_cast<float>(q4);
    }
  }
}

}  // namespace

void GgufScaleMinK4(const uint8_t* scales, int j, int* sc, int* m) {
  if (j < 4) {
    *sc = scales[j] & 63;
    *m = scales[j + 4] & 63;
  } else {
    *sc = (scales[j + 4] & 0x0F) | ((scales[j - 4] >> 6) << 4);
    *m = (scales[j + 4] >> 4) | ((scales[j] >> 6) << 4);  // scales[j], not [j - 4] (formats.md)
  }
}

void DequantizeGgufBlock(QuantKind kind, const uint8_t* block, float* out) {
  switch (kind) {
    case QuantKind::kQ4_0: return Q4_0(block, out);
    case QuantKind::kQ4_1: return Q4_1(block, out);
    case QuantKind::kQ5_0: return Q5_0(block, out);
    case QuantKind::kQ5_1: return Q5_1(block, out);
    case QuantKind::kQ8_0: return Q8_0(block, out);
    case QuantKind::kQ4_K: return Q4_K(block, out);
    case QuantKind::kQ5_K: return Q5_K(block, out);
    case QuantKind::kQ6_K: return Q6_K(block, out);
    default: return;  // not a GGUF block kind: callers check IsGgufBlock first
  }
}

void DequantizeGgufRow(QuantKind kind, const uint8_t* row, int64_t K, float* out) {
  const BlockFormat f = GgufBlockFormat(kind);
  if (f.elems == 0) return;
  for (int64_t b = 0; b < K / f.elems; ++b) DequantizeGgufBlock(kind, row + b * f.bytes, out + b * f.elems);
}

}  // namespace g4
