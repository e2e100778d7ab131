// Reference kernels: plain scalar C++, f64 accumulation where cheap, obviously correct.
// They are the oracle for every SIMD and CUDA kernel test and the fallback of every backend.
// Contracts: see the op headers in src/ops/ (same file stems as the .cc files here), which write
// each op's signature once, as a function type (MatMulOp): `MatMulOp MatMul;` declares the
// kernel with it, so no backend's kernel can drift from the op table's signature.
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

MatMulOp MatMul;
// Row n of a [N, K] weight widened to f64 (quantized: dequantized as the format defines it).
void WeightRow(const TensorView& w, int64_t n, std::vector<double>& out);
MatMulOp MatMulQ8a;
RmsNormOp RmsNorm;
RopeOp Rope;
AttentionOp Attention;
GeluMulOp GeluMul;
SoftcapOp Softcap;
EmbedOp Embed;
AddOp Add;
ScaleOp Scale;
ResidualNormOp ResidualNorm;
NormRopeOp NormRope;
MoeOp Moe;
// Plain row copies (a bf16 cache: rounded per value): also the CPU backend's KvWrite (memcpy
// has nothing left to vectorize; the bf16 rounding is a few ns per row next to the layer).
KvWriteOp KvWrite;

// gelu_tanh of one value, in f64 (shared by the ref kernels and the CPU kernels' scalar tails).
double GeluTanh(double x);

}  // namespace g4::ref
