// Q6_K weights in the packed panels of matmul_q8a_packed.h (internal to the CPU kernels; the
// entry points there dispatch here).
#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "core/thread_pool.h"

namespace g4::cpu {

// Bytes of one 16-row Q6_K panel of K values (K % 256 == 0).
int64_t Q6KPanelBytes(int64_t K);

// Panel p (rows 16 p .. 16 p + 15 of w, the missing ones zero) into out (Q6KPanelBytes).
void PackPanelQ6K(const TensorView& w, int64_t p, uint8_t* out);

// MatMulQ8aPacked for a Q6_K w whose quant.panels PackPanelQ6K made. AVX-512 VNNI only.
void MatMulQ8aPackedQ6K(ThreadPool& pool, const TensorView& w, const float* x, int64_t T,
                        float* y);

// The same on AVX2 (MatMulQ8aPackedAvx2's Q6_K).
void MatMulQ8aPackedQ6KAvx2(ThreadPool& pool, const TensorView& w, const float* x, int64_t T,
                            float* y);

}  // namespace g4::cpu
