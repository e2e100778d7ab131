// Device-side loads of weight elements stored as F32, BF16 or F16, widened to f32 in registers.
// bf16 widening is a shift (no bf16 datapath needed, so the small kernels read bf16 weights as
// stored even on SM 7.x); f16 uses the hardware conversion.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

namespace g4::cuda {

enum class ElemType : int { kF32, kBF16, kF16 };

template <ElemType E>
__device__ __forceinline__ float LoadF32(const void* p, int64_t i) {
  if constexpr (E == ElemType::kF32) {
    return static_cast<const float*>(p)[i];
  } else if constexpr (E == ElemType::kBF16) {
    return __uint_as_float(static_cast<uint32_t>(static_cast<const uint16_t*>(p)[i]) << 16);
  } else {
    return __half2float(__ushort_as_half(static_cast<const uint16_t*>(p)[i]));
  }
}

// Blocks of `threads` covering n elements, capped so huge n loops inside the kernel.
inline unsigned GridFor(int64_t n, int threads) {
  const int64_t blocks = (n + threads - 1) / threads;
  return static_cast<unsigned>(blocks < 65535 * 16 ? (blocks > 0 ? blocks : 1) : 65535 * 16);
}

}  // namespace g4::cuda
