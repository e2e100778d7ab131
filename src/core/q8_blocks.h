// Activations quantized to int8 blocks of 32, as llama.cpp's quantize_row_q8_0 does it: the
// input of the integer-dot-product matvecs (ops/matmul_q8a.h). One definition shared by the ref
// and CPU kernels, so both see the same integers and differ only in summation order.
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace g4 {

inline constexpr int64_t kQ8Block = 32;

// x: [K], K % kQ8Block == 0. Per block b of 32: d[b] = absmax / 127, q = round(x / d) (ties away
// from zero, as roundf; |q| <= 127), sum[b] = the sum of its 32 q. An all-zero block gets d 0,
// q 0.
void QuantizeQ8Blocks(const float* x, int64_t K, int8_t* q, float* d, int32_t* sum);

// The GGUF kinds with an integer dot product against these blocks (ops/matmul_q8a.h), whose
// values are u - offset for small unsigned u: Q4_0 (4-bit u, offset 8), Q5_0 (5-bit, 16), Q8_0
// (the int8 q itself; as u = q + 128 for a u8 x s8 instruction, offset 128).
bool HasQ8Dot(QuantKind kind);
int32_t Q8DotOffset(QuantKind kind);

// sum_{j < 32} q_j * xq[j] for the 32 integer values q of one weight block of kind (HasQ8Dot),
// before its scale d: exact.
int32_t Q8BlockDot(QuantKind kind, const uint8_t* block, const int8_t* xq);

}  // namespace g4
