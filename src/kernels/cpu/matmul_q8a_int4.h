// MatMulQ8a (ops/matmul_q8a.h) on W4A16's int4 groups of 32 (IsInt4Group32): their grid is Q4_0's,
// so where every scale is an f16 they are packed at load as Q4_0 panels (matmul_q8a_packed.h) and
// read by the Q4_0 panel kernels, at Q4_0's speed and with the same weights.
#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "core/thread_pool.h"
#include "ops/matmul_q8a.h"

namespace g4::cpu {

// Q4_0 panels of a 2-D w (an [E, N, K] stack seen as its E * N rows), built a panel at a time,
// or null panels when a scale is not an f16.
PackedWeight PackQ8aInt4Panels(ThreadPool& pool, const TensorView& w);

// w with panels from PackQ8aInt4Panels, seen as the Q4_0 weight those panels hold (for the panel
// kernels, which read only the panels).
TensorView Int4PanelsAsQ4_0(const TensorView& w);

// MatMulQ8a of w (IsInt4Group32, packed) from its stored rows, in scalar code: where a test pins
// a target below the panel kernels'.
void MatMulQ8aInt4Rows(ThreadPool& pool, const TensorView& w, const float* x, int64_t T, float* y);

}  // namespace g4::cpu
