// Element types of tensors in checkpoint files, and the scalar conversions between the
// 16-bit float formats and f32. Kernels use these in scalar tails; SIMD kernels convert in
// registers with the same rounding (round to nearest, ties to even).
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

namespace g4 {

enum class DType : uint8_t { kF32, kF16, kBF16, kI32, kI64, kU8, kI8 };

// Bytes per element.
size_t DTypeSize(DType t);
// The safetensors spelling: "F32", "BF16", ...
const char* DTypeName(DType t);
// Parses the safetensors spelling; nullopt for anything else.
std::optional<DType> ParseDType(std::string_view name);
inline bool IsFloat(DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }

inline float Bf16ToF32(uint16_t bits) {
  uint32_t u = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline uint16_t F32ToBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // NaN
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest, ties to even
  return static_cast<uint16_t>(u >> 16);
}

float F16ToF32(uint16_t bits);
uint16_t F32ToF16(float f);

// Element i of a float tensor stored as `t`, widened to f32. Byte copies: safetensors only
// guarantees byte offsets, so `data` may be misaligned for its dtype.
inline float LoadAsF32(const void* data, DType t, int64_t i) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  switch (t) {
    case DType::kF32: {
      float f;
      std::memcpy(&f, bytes + i * 4, 4);
      return f;
    }
    case DType::kBF16:
    case DType::kF16: {
      uint16_t u;
      std::memcpy(&u, bytes + i * 2, 2);
      return t == DType::kBF16 ? Bf16ToF32(u) : F16ToF32(u);
    }
    default: return 0.0f;  // callers check IsFloat() first
  }
}

}  // namespace g4
