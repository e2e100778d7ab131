#include "core/q8_blocks.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace g4 {

void QuantizeQ8Blocks(const float* x, int64_t K, int8_t* q, float* d, int32_t* sum) {
  for (int64_t b = 0; b < K / kQ8Block; ++b) {
    const float* xb = x + b * kQ8Block;
    float amax = 0.0f;
    for (int64_t j = 0; j < kQ8Block; ++j) amax = std::max(amax, std::fabs(xb[j]));
    const float db = amax / 127.0f;
    const float id = db != 0.0f ? 1.0f / db : 0.0f;
    int32_t s = 0;
    for (int64_t j = 0; j < kQ8Block; ++j) {
      const float v = std::clamp(std::roundf(xb[j] * id), -127.0f, 127.0f);
      q[b * kQ8Block + j] = static_cast<int8_t>(v);
      s += static_cast<int32_t>(v);
    }
    d[b] = db;
    sum[b] = s;
  }
}

bool HasQ8Dot(QuantKind kind) {
  return kind == QuantKind::kQ4_0 || kind == QuantKind::kQ5_0 || kind == QuantKind::kQ8_0;
}

int32_t Q8DotOffset(QuantKind kind) {
  return kind == QuantKind::kQ4_0 ? 8 : kind == QuantKind::kQ5_0 ? 16 : 128;
}

int32_t Q8BlockDot(QuantKind kind, const uint8_t* block, const int8_t* xq) {
  // Layouts (core/gguf_blocks.h): Q4_0 half d, u8 qs[16]; Q5_0 half d, u32 qh, u8 qs[16]: element
  // j < 16 is the low nibble of qs[j] (Q5_0: plus bit j of qh as bit 4), element j + 16 the high
  // nibble (bit j + 16); Q8_0 half d, i8 qs[32].
  int32_t dot = 0;
  if (kind == QuantKind::kQ8_0) {
    for (int j = 0; j < 32; ++j) dot += static_cast<int8_t>(block[2 + j]) * xq[j];
    return dot;
  }
  uint32_t qh = 0;
  if (kind == QuantKind::kQ5_0) std::memcpy(&qh, block + 2, 4);
  const uint8_t* qs = block + (kind == QuantKind::kQ5_0 ? 6 : 2);
  const int32_t offset = Q8DotOffset(kind);
  for (int j = 0; j < 16; ++j) {
    const int32_t lo = (qs[j] & 0xf) | static_cast<int32_t>((qh >> j) & 1) << 4;
    const int32_t hi = (qs[j] >> 4) | static_cast<int32_t>((qh >> (j + 16)) & 1) << 4;
    dot += (lo - offset) * xq[j] + (hi - offset) * xq[j + 16];
  }
  return dot;
}

}  // namespace g4
