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
// q 0. sum may be null (the KV cache's q8 blocks, ops/kv_write.h, keep no sums).
void QuantizeQ8Blocks(const float* x, int64_t K, int8_t* q, float* d, int32_t* sum);

// The GGUF kinds with an integer dot product against these blocks (ops/matmul_q8a.h): Q4_0,
// Q5_0 and Q8_0 (32 values per block, one scale d), Q4_K (256 values: 8 sub-blocks of 32, each
// with a 6-bit scale and min under the block's d and dmin) and Q6_K (256 values: 16 groups of
// 16 under int8 scales and d). Every value is d * (u - offset), d * sc * u - dmin * m or
// d * sc * (u - offset) with u unsigned: Q4_0 and Q4_K nibbles, Q5_0 5-bit and Q6_K 6-bit values
// (offset 8, 16, 32); for Q8_0 the int8 q itself (as u = q + 128 for a u8 x s8 instruction,
// offset 128).
bool HasQ8Dot(QuantKind kind);
constexpr int32_t Q8DotOffset(QuantKind kind) {
  switch (kind) {
    case QuantKind::kQ4_0: return 8;
    case QuantKind::kQ5_0: return 16;
    case QuantKind::kQ8_0: return 128;
    case QuantKind::kQ6_K: return 32;
    default: return 0;
  }
}

// sum_{j < 32} q_j * xq[j] for the 32 integer values q of one Q4_0 / Q5_0 / Q8_0 weight block,
// before its scale d: exact.
int32_t Q8BlockDot(QuantKind kind, const uint8_t* block, const int8_t* xq);

// One weight block of kind (HasQ8Dot) dotted with the quantized x under it (xq: its elements,
// dx / sum: their blocks of 32), in f64 from exact integer sums: for 32-value kinds
// d * dx[0] * Q8BlockDot; Q4_K: sum_i dx[i] (d sc_i sum_j u_ij xq_ij - dmin m_i sum[i]); Q6_K:
// sum_g d sc_g dx[g / 2] sum_j (u_gj - 32) xq_gj over its 16 groups of 16.
double Q8Dot(QuantKind kind, const uint8_t* block, const int8_t* xq, const float* dx,
             const int32_t* sum);

// int4 groups of 32 (QuantKind::kInt4Group with group_size 32: the W4A16 exports) are Q4_0's
// grid, q = u - 8 under one scale per group, in compressed-tensors' nibble order (element k in
// byte k / 2, the low nibble for even k; core/tensor.h). MatMulQ8a runs them as Q4_0 where the
// backend packed them (ops/matmul_q8a.h).
inline bool IsInt4Group32(const TensorView& w) {
  return w.quant.kind == QuantKind::kInt4Group && w.quant.group_size == kQ8Block;
}
// sum_{j < 32} q_j * xq[j] over one int4 group (its 16 bytes): exact.
int32_t Q8Int4GroupDot(const uint8_t* group, const int8_t* xq);
// Group g of row n of w (IsInt4Group32) written as a Q4_0 block (half d, byte j holding elements
// j and j + 16): false, with nothing written, when its scale is not exactly an f16 (bf16 scales
// below f16's range, or with mantissa bits below an f16 subnormal's), since the block could not
// give the same weights.
bool Int4GroupToQ4_0(const TensorView& w, int64_t n, int64_t g, uint8_t* block);

}  // namespace g4
