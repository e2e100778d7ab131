// What every kernel source shares: device-side loads of elements stored as F32, BF16 or F16,
// widened to f32 in registers, a block-wide sum, the grid size of the elementwise kernels, and
// the launch check. bf16 widening is a shift (no bf16 datapath needed, so the kernels read bf16
// as stored even on SM 7.x); f16 uses the hardware conversion.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "core/status.h"

namespace g4::cuda {

// A stored element type the kernels widen to f32.
enum class ElemType : int { kF32, kBF16, kF16 };

// A bf16 / f16 value from its 16 bits (in the low half of `bits`).
__device__ __forceinline__ float Bf16BitsToF32(uint32_t bits) {
  return __uint_as_float(bits << 16);
}
__device__ __forceinline__ float F16BitsToF32(uint32_t bits) {
  return __half2float(__ushort_as_half(static_cast<unsigned short>(bits)));
}

template <ElemType E>
__device__ __forceinline__ float LoadF32(const void* p, int64_t i) {
  if constexpr (E == ElemType::kF32) {
    return static_cast<const float*>(p)[i];
  } else if constexpr (E == ElemType::kBF16) {
    return Bf16BitsToF32(static_cast<const uint16_t*>(p)[i]);
  } else {
    return F16BitsToF32(static_cast<const uint16_t*>(p)[i]);
  }
}

// The same with the type known only at run time (a kernel argument).
__device__ __forceinline__ float LoadF32(ElemType e, const void* p, int64_t i) {
  if (e == ElemType::kF32) return LoadF32<ElemType::kF32>(p, i);
  if (e == ElemType::kBF16) return LoadF32<ElemType::kBF16>(p, i);
  return LoadF32<ElemType::kF16>(p, i);
}

// The sum of v over the block's kThreads threads (a multiple of 32), the same value in every
// thread, in a fixed order (warp shuffles, then the warps' partials in order). `partials`:
// kThreads / 32 floats of shared memory, free for reuse when it returns.
template <int kThreads>
__device__ __forceinline__ float BlockSum(float v, float* partials) {
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  if ((threadIdx.x & 31) == 0) partials[threadIdx.x >> 5] = v;
  __syncthreads();
  float total = 0.0f;
  for (int i = 0; i < kThreads / 32; ++i) total += partials[i];
  __syncthreads();
  return total;
}

// gelu_tanh(x) in f32 with tanhf (the tanh form, as HF gelu_pytorch_tanh): GeluMul's and the
// gated GEMV epilogue's.
__device__ __forceinline__ float GeluTanhF32(float x) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  return 0.5f * x * (1.0f + tanhf(kSqrt2OverPi * (x + 0.044715f * x * x * x)));
}

// Blocks of `threads` covering n elements, capped so huge n loops inside the kernel.
inline unsigned GridFor(int64_t n, int threads) {
  const int64_t blocks = (n + threads - 1) / threads;
  return static_cast<unsigned>(blocks < 65535 * 16 ? (blocks > 0 ? blocks : 1) : 65535 * 16);
}

// The error of the last kernel launch (bad configuration, too much shared memory), if any.
inline Status LaunchStatus(const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return Status::Ok();
  return Internal(std::string(what) + ": " + cudaGetErrorString(e));
}

}  // namespace g4::cuda
