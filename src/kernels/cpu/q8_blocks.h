// g4::QuantizeQ8Blocks (core/q8_blocks.h) in Highway SIMD with runtime dispatch, bit for bit
// (q8_blocks.cc): the CPU's int8-activation matmuls quantize x with it.
#pragma once

#include <cstdint>

namespace g4::cpu {

void QuantizeQ8Blocks(const float* x, int64_t K, int8_t* q, float* d, int32_t* sum);

// sums[g] = q[16 g] + ... + q[16 g + 15] for g < K / 16: the Q6_K kernels' offset correction
// (its 6-bit values are stored + 32, and each group of 16 has a scale of its own).
void SumsOf16(const int8_t* q, int64_t K, int32_t* sums);

}  // namespace g4::cpu
