// The T > 1 part of the CPU MatMulQ8a (ops/matmul_q8a.h) for weights without panels packed at
// load: prefill chunks and batches, as panels of 16 rows whose integer lanes are rows, built per
// call. AVX-512 VNNI: Q4_0 / Q5_0 / Q8_0 / Q4_K / Q6_K blocks; AVX2: Q4_K / Q6_K.
#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "core/thread_pool.h"

namespace g4::cpu {

// y: [T, N] = x: [T, K] w^T with x's rows quantized as MatMulQ8a does, for HasQ8Dot(w's kind)
// and K a multiple of its block. Only where AVX-512 F/BW/VL + VNNI run (the caller's path choice).
void MatMulQ8aPanels(ThreadPool& pool, const TensorView& w, const float* x, int64_t T, float* y);
// The same for Q4_K / Q6_K where AVX2 runs (matmul_q8a_gemm_avx2.cc).
void MatMulQ8aPanelsAvx2(ThreadPool& pool, const TensorView& w, const float* x, int64_t T,
                         float* y);

}  // namespace g4::cpu
