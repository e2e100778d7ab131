#include "core/q8_blocks.h"

#include "core/dtype.h"
#include "core/gguf_blocks.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace g4 {

namespace {

// roundf (ties away from zero) clamped to [-127, 127], for |v| <= 127 * (1 + 2^-23) as x * id
// gives: truncate, then step by one where the part cut off is at least a half (exact in f32).
// Inline: the libm call cost more than the rest of the quantization (once per element, once per
// matmul call on the decode path).
inline int32_t RoundToQ8(float v) {
  int32_t i = static_cast<int32_t>(v);
  const float cut = v - static_cast<float>(i);
  i += cut >= 0.5f ? 1 : cut <= -0.5f ? -1 : 0;
  return std::clamp(i, -127, 127);
}

}  // namespace

void QuantizeQ8Blocks(const float* x, int64_t K, int8_t* q, float* d, int32_t* sum) {
  for (int64_t b = 0; b < K / kQ8Block; ++b) {
    const float* xb = x + b * kQ8Block;
    float amax = 0.0f;
    for (int64_t j = 0; j < kQ8Block; ++j) amax = std::max(amax, std::fabs(xb[j]));
    const float db = amax / 127.0f;
    const float id = db != 0.0f ? 1.0f / db : 0.0f;
    int32_t s = 0;
    for (int64_t j = 0; j < kQ8Block; ++j) {
      const int32_t v = RoundToQ8(xb[j] * id);
      q[b * kQ8Block + j] = static_cast<int8_t>(v);
      s += v;
    }
    d[b] = db;
    if (sum != nullptr) sum[b] = s;
  }
}

bool HasQ8Dot(QuantKind kind) {
  return kind == QuantKind::kQ4_0 || kind == QuantKind::kQ5_0 || kind == QuantKind::kQ8_0 ||
         kind == QuantKind::kQ4_K || kind == QuantKind::kQ6_K;
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

double Q8Dot(QuantKind kind, const uint8_t* block, const int8_t* xq, const float* dx,
             const int32_t* sum) {
  if (kind == QuantKind::kQ6_K) {
    // Q6_K: u8 ql[128], u8 qh[64], i8 scales[16], half d; value v = 128 h + 32 s + l (half h,
    // part s < 4, l < 32) is the nibble s / 2 of ql[64 h + 32 (s % 2) + l] with bits 2s, 2s + 1
    // of qh[32 h + l] above it, minus 32, under scale v / 16 (core/gguf_blocks.h).
    const double d = GgufHalf(block + 208);
    const int8_t* sc = reinterpret_cast<const int8_t*>(block + 192);
    double acc = 0.0;
    for (int g = 0; g < 16; ++g) {
      int32_t dot = 0;
      for (int v = 16 * g; v < 16 * g + 16; ++v) {
        const int h = v / 128, part = v % 128 / 32, l = v % 32;
        const int nib = (block[64 * h + 32 * (part % 2) + l] >> (4 * (part / 2))) & 0xf;
        const int hi = (block[128 + 32 * h + l] >> (2 * part)) & 3;
        dot += ((nib | hi << 4) - 32) * xq[v];
      }
      acc += d * sc[g] * static_cast<double>(dx[g / 2]) * dot;
    }
    return acc;
  }
  if (kind != QuantKind::kQ4_K) {
    return static_cast<double>(GgufHalf(block)) * dx[0] * Q8BlockDot(kind, block, xq);
  }
  // Q4_K: half d, half dmin, u8 scales[12], u8 qs[128]; chunk c of 64 values: the low nibbles of
  // qs[32c ..] are sub-block 2c, the high nibbles 2c + 1 (core/gguf_blocks.h).
  const double d = GgufHalf(block), dmin = GgufHalf(block + 2);
  const uint8_t* qs = block + 16;
  double acc = 0.0;
  for (int i = 0; i < 8; ++i) {
    int sc, m;
    GgufScaleMinK4(block + 4, i, &sc, &m);
    const int shift = 4 * (i % 2);
    int32_t dot = 0;
    for (int j = 0; j < 32; ++j) dot += ((qs[32 * (i / 2) + j] >> shift) & 0xf) * xq[32 * i + j];
    acc += static_cast<double>(dx[i]) * (d * sc * dot - dmin * m * sum[i]);
  }
  return acc;
}

int32_t Q8Int4GroupDot(const uint8_t* group, const int8_t* xq) {
  int32_t dot = 0;
  for (int j = 0; j < 16; ++j) {
    dot += ((group[j] & 0xf) - 8) * xq[2 * j] + ((group[j] >> 4) - 8) * xq[2 * j + 1];
  }
  return dot;
}

bool Int4GroupToQ4_0(const TensorView& w, int64_t n, int64_t g, uint8_t* block) {
  const int64_t groups = w.dim(1) / kQ8Block;
  const float scale = LoadAsF32(w.quant.scales, w.quant.scale_dtype, n * groups + g);
  const uint16_t d = F32ToF16(scale);
  if (F16ToF32(d) != scale) return false;
  std::memcpy(block, &d, 2);
  const uint8_t* src = static_cast<const uint8_t*>(w.data) + n * w.quant.row_bytes + g * 16;
  const auto nibble = [&](int k) { return (src[k / 2] >> (4 * (k % 2))) & 0xf; };
  for (int j = 0; j < 16; ++j) block[2 + j] = static_cast<uint8_t>(nibble(j) | nibble(j + 16) << 4);
  return true;
}

}  // namespace g4
