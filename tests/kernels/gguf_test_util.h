// Random GGUF block weights for the kernel tests: random bytes (every packed-quant and K-quant
// scale bit pattern) with the f16 fields (d, dmin / m) overwritten by finite values in
// [-0.1, 0.1], so no block decodes to inf or NaN.
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "core/dtype.h"
#include "core/tensor.h"

namespace g4::testing {

// Byte offsets of a block's f16 fields.
inline std::vector<int64_t> GgufHalfOffsets(QuantKind kind) {
  switch (kind) {
    case QuantKind::kQ4_0:
    case QuantKind::kQ5_0:
    case QuantKind::kQ8_0: return {0};
    case QuantKind::kQ6_K: return {208};
    default: return {0, 2};  // Q4_1, Q5_1 (d, m), Q4_K, Q5_K (d, dmin)
  }
}

// A GGUF [N, K] weight (or [V, D] table); data one byte past an aligned address when misalign.
class GgufTensor {
 public:
  GgufTensor(QuantKind kind, int64_t N, int64_t K, bool misalign, uint32_t seed) {
    const BlockFormat f = GgufBlockFormat(kind);
    const int64_t row_bytes = K / f.elems * f.bytes;
    bytes_.resize(static_cast<size_t>(N * row_bytes + 64));
    uint8_t* d = bytes_.data() + (misalign ? 1 : 0);
    std::mt19937 rng(seed);
    for (int64_t i = 0; i < N * row_bytes; ++i) d[i] = static_cast<uint8_t>(rng());
    std::uniform_real_distribution<float> dist(-0.1f, 0.1f);
    for (int64_t b = 0; b < N * (K / f.elems); ++b) {
      for (int64_t off : GgufHalfOffsets(kind)) {
        const uint16_t h = F32ToF16(dist(rng));
        std::memcpy(d + b * f.bytes + off, &h, 2);
      }
    }
    view_ = TensorView(d, DType::kU8, {N, K}, QuantInfo{kind, nullptr, DType::kF16, f.elems, row_bytes});
  }
  const TensorView& view() const { return view_; }

 private:
  std::vector<uint8_t> bytes_;
  TensorView view_;
};

inline constexpr QuantKind kGgufKinds[] = {QuantKind::kQ4_0, QuantKind::kQ4_1, QuantKind::kQ5_0,
                                           QuantKind::kQ5_1, QuantKind::kQ8_0, QuantKind::kQ4_K,
                                           QuantKind::kQ5_K, QuantKind::kQ6_K};

}  // namespace g4::testing
