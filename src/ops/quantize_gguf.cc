// GGUF block quantizers (see quantize_gguf.h for the schemes and their error bounds). Load- and
// write-time only: plain scalar code.
#include "ops/quantize_gguf.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "core/dtype.h"
#include "core/gguf_blocks.h"

namespace g4 {
namespace {

void PutHalf(float v, uint8_t* p) {
  const uint16_t bits = F32ToF16(v);
  std::memcpy(p, &bits, 2);
}

// 34 bytes: half d; i8 qs[32].
void Q8_0(const float* x, uint8_t* b) {
  float amax = 0.0f;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  PutHalf(d, b);
  for (int j = 0; j < 32; ++j) b[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(std::roundf(x[j] * id)));
}

// 18 bytes: half d; u8 qs[16] (low nibbles: elements 0..15, high: 16..31).
void Q4_0(const float* x, uint8_t* b) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < 32; ++j) {
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  const float d = max / -8.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  PutHalf(d, b);
  for (int j = 0; j < 16; ++j) {
    const int q0 = std::min(15, static_cast<int>(static_cast<int8_t>(x[j] * id + 8.5f)));
    const int q1 = std::min(15, static_cast<int>(static_cast<int8_t>(x[j + 16] * id + 8.5f)));
    b[2 + j] = static_cast<uint8_t>(q0 | (q1 << 4));
  }
}

// 144 bytes: half d; half dmin; u8 scales[12]; u8 qs[128].
void Q4_K(const float* x, uint8_t* b) {
  float scale[8], negmin[8], max_scale = 0.0f, max_min = 0.0f;
  for (int s = 0; s < 8; ++s) {
    float lo = 0.0f, hi = 0.0f;  // the range always holds 0, so mins are <= 0
    for (int l = 0; l < 32; ++l) {
      lo = std::min(lo, x[32 * s + l]);
      hi = std::max(hi, x[32 * s + l]);
    }
    scale[s] = (hi - lo) / 15.0f;
    negmin[s] = -lo;
    max_scale = std::max(max_scale, scale[s]);
    max_min = std::max(max_min, negmin[s]);
  }
  PutHalf(max_scale / 63.0f, b);
  PutHalf(max_min / 63.0f, b + 2);
  const float d = GgufHalf(b), dmin = GgufHalf(b + 2);  // what readers will use
  int sc[8], m[8];
  for (int s = 0; s < 8; ++s) {
    // Round the scale up and the min up so [dmin*m, dmin*m + 15*d*sc] still covers the range.
    sc[s] = d > 0 ? std::clamp(static_cast<int>(std::ceil(scale[s] / d)), 0, 63) : 0;
    m[s] = dmin > 0 ? std::clamp(static_cast<int>(std::ceil(negmin[s] / dmin)), 0, 63) : 0;
  }
  uint8_t* scales = b + 4;
  std::memset(scales, 0, 12);
  for (int j = 0; j < 8; ++j) {  // the inverse of GgufScaleMinK4
    if (j < 4) {
      scales[j] |= static_cast<uint8_t>(sc[j]);
      scales[j + 4] |= static_cast<uint8_t>(m[j]);
    } else {
      scales[j + 4] = static_cast<uint8_t>((sc[j] & 0xF) | ((m[j] & 0xF) << 4));
      scales[j - 4] |= static_cast<uint8_t>((sc[j] >> 4) << 6);
      scales[j] |= static_cast<uint8_t>((m[j] >> 4) << 6);
    }
  }
  uint8_t* qs = b + 16;
  for (int c = 0; c < 4; ++c) {
    int q[2][32];
    for (int h = 0; h < 2; ++h) {
      const int s = 2 * c + h;
      const float step = d * static_cast<float>(sc[s]), off = dmin * static_cast<float>(m[s]);
      for (int l = 0; l < 32; ++l) {
        q[h][l] = step > 0 ? std::clamp(static_cast<int>(std::lround((x[32 * s + l] + off) / step)), 0, 15) : 0;
      }
    }
    for (int l = 0; l < 32; ++l) qs[32 * c + l] = static_cast<uint8_t>(q[0][l] | (q[1][l] << 4));
  }
}

// 210 bytes: u8 ql[128]; u8 qh[64]; i8 scales[16]; half d.
void Q6_K(const float* x, uint8_t* b) {
  float scale[16], max_scale = 0.0f;
  for (int s = 0; s < 16; ++s) {
    float amax = 0.0f;
    for (int l = 0; l < 16; ++l) amax = std::max(amax, std::fabs(x[16 * s + l]));
    scale[s] = amax / 31.5f;
    max_scale = std::max(max_scale, scale[s]);
  }
  PutHalf(max_scale / 127.0f, b + 208);
  const float d = GgufHalf(b + 208);
  int8_t* sc = reinterpret_cast<int8_t*>(b + 192);
  int q[256];
  for (int s = 0; s < 16; ++s) {
    sc[s] = static_cast<int8_t>(d > 0 ? std::clamp(static_cast<int>(std::lround(scale[s] / d)), 0, 127) : 0);
    const float step = d * static_cast<float>(sc[s]);
    for (int l = 0; l < 16; ++l) {
      const int v = step > 0 ? static_cast<int>(std::lround(x[16 * s + l] / step)) : 0;
      q[16 * s + l] = std::clamp(v, -32, 31) + 32;
    }
  }
  uint8_t* ql = b;
  uint8_t* qh = b + 128;
  for (int h = 0; h < 2; ++h) {
    for (int l = 0; l < 32; ++l) {
      const int q1 = q[128 * h + l], q2 = q[128 * h + l + 32];
      const int q3 = q[128 * h + l + 64], q4 = q[128 * h + l + 96];
      ql[64 * h + l] = static_cast<uint8_t>((q1 & 0xF) | ((q3 & 0xF) << 4));
      ql[64 * h + l + 32] = static_cast<uint8_t>((q2 & 0xF) | ((q4 & 0xF) << 4));
      qh[32 * h + l] = static_cast<uint8_t>((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6));
    }
  }
}

}  // namespace

bool CanQuantizeGguf(QuantKind kind) {
  return kind == QuantKind::kQ8_0 || kind == QuantKind::kQ4_0 || kind == QuantKind::kQ4_K ||
         kind == QuantKind::kQ6_K;
}

Status QuantizeGgufRow(QuantKind kind, const float* w, int64_t K, uint8_t* out) {
  const BlockFormat f = GgufBlockFormat(kind);
  if (f.elems == 0) return InvalidArgument(std::string("not a GGUF block kind: '") + QuantKindName(kind) + "'");
  if (!CanQuantizeGguf(kind)) return Unimplemented(std::string("no GGUF quantizer for ") + QuantKindName(kind));
  if (K <= 0 || K % f.elems != 0) {
    return InvalidArgument("GGUF " + std::string(QuantKindName(kind)) + " row of " + std::to_string(K) +
                           " elements: not a positive multiple of the block size " + std::to_string(f.elems));
  }
  void (*quantize)(const float*, uint8_t*) = nullptr;
  switch (kind) {
    case QuantKind::kQ8_0: quantize = Q8_0; break;
    case QuantKind::kQ4_0: quantize = Q4_0; break;
    case QuantKind::kQ4_K: quantize = Q4_K; break;
    default: quantize = Q6_K; break;
  }
  for (int64_t b = 0; b < K / f.elems; ++b) quantize(w + b * f.elems, out + b * f.bytes);
  return Status::Ok();
}

}  // namespace g4
