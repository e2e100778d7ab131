// g4::QuantizeQ8Blocks (core/q8_blocks.h) in Highway SIMD with runtime dispatch, bit for bit
// (q8_blocks.cc): the CPU's int8-activation matmuls quantize x with it.
#pragma once

#include <cstdint>

namespace g4::cpu {

void QuantizeQ8Blocks(const float* x, int64_t K, int8_t* q, float* d, int32_t* sum);

}  // namespace g4::cpu
