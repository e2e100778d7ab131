// Reference kernels: plain scalar C++, f64 accumulation where cheap, obviously correct.
// They are the oracle for every SIMD and CUDA kernel test and the fallback of every backend.
// Contracts: see the op headers in src/ops/ (same file stems as the .cc files here).
#pragma once

#include "ops/attention.h"
#include "ops/elementwise.h"
#include "ops/embed.h"
#include "ops/gelu.h"
#include "ops/kv_write.h"
#include "ops/matmul.h"
#include "ops/matmul_q8a.h"
#include "ops/moe.h"
#include "ops/norm_rope.h"
#include "ops/residual_norm.h"
#include "ops/rms_norm.h"
#include "ops/rope.h"
#include "ops/softcap.h"

namespace g4::ref {

void MatMul(ThreadPool& pool, const TensorView& w, const float* x, int64_t T, float* y);
// Row n of a [N, K] weight widened to f64 (quantized: dequantized as the format defines it).
void WeightRow(const TensorView& w, int64_t n, std::vector<double>& out);
void MatMulQ8a(ThreadPool& pool, const TensorView& w, const float* x, int64_t T, float* y);
void RmsNorm(ThreadPool& pool, const float* x, const TensorView& w, int64_t R, int64_t D, float eps,
             float* out);
void Rope(ThreadPool& pool, float* x, const int32_t* positions, int64_t T, int64_t H, int64_t D,
          const float* inv_freq);
void Attention(ThreadPool& pool, const AttentionArgs& a);
void GeluMul(ThreadPool& pool, const float* gate, const float* up, int64_t R, int64_t n,
             int64_t up_stride, float* out);
void Softcap(ThreadPool& pool, float* x, int64_t n, float cap);
void Embed(ThreadPool& pool, const TensorView& table, const int32_t* ids, int64_t T, float scale,
           float* out);
void Add(ThreadPool& pool, const float* a, const float* b, int64_t n, float* out);
void Scale(ThreadPool& pool, float* x, int64_t n, float s);
void ResidualNorm(ThreadPool& pool, const ResidualNormArgs& a);
void NormRope(ThreadPool& pool, const NormRopeArgs& args);
void Moe(ThreadPool& pool, const MoeArgs& a);
// Plain row copies (a bf16 cache: rounded per value): also the CPU backend's KvWrite (memcpy
// has nothing left to vectorize; the bf16 rounding is a few ns per row next to the layer).
void KvWrite(ThreadPool& pool, const KvWriteArgs& a);

// gelu_tanh of one value, in f64 (shared by the ref kernels and the CPU kernels' scalar tails).
double GeluTanh(double x);

}  // namespace g4::ref
