// MatMul: the linear layer, y = x @ w^T (PyTorch nn.Linear without bias).
// w: [N, K] in its file dtype (F32, BF16 or F16), widened to f32 in registers, or quantized
// (w.quant: int4 / int8 groups with per-(row, group) scales, or GGUF blocks, core/tensor.h),
// dequantized in registers; x: [T, K] f32; y: [T, N] f32, must not alias x. Accumulation in f32
// (ref: f64). Kernels dispatch on w.quant.kind; callers never see the storage.
#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "core/thread_pool.h"
#include "ops/gelu.h"

namespace g4 {
using MatMulOp = void(ThreadPool& pool, const TensorView& w, const float* x, int64_t T, float* y);
using MatMulFn = MatMulOp*;

// GroupedMatMul: y[i] = x @ w[i]^T for i < count, weights that read the same x (a layer's q, k
// and v projections; the MLP's gate and up), each pair as in MatMul. One op because a device
// runs the decode GEMVs of weights with the same K and storage as one launch. With gelu_gate
// (count 2, w[0] and w[1] of one N: the MLP's gate and up), y[0] = GeluMul(x @ w[0]^T,
// x @ w[1]^T) (ops/gelu.h) instead, and y[1] is scratch (a device computes both rows in one
// warp and never writes it). With gelu_up (count 1: the PLE branch's gate), y[0] =
// GeluMul(x @ w[0]^T, gelu_up) over T rows of N, gelu_up's rows gelu_up_stride apart.
inline constexpr int kMaxMatMulGroup = 3;
struct MatMulGroup {
  const TensorView* w[kMaxMatMulGroup] = {};
  float* y[kMaxMatMulGroup] = {};
  int count = 0;
  bool gelu_gate = false;
  const float* gelu_up = nullptr;  // [T rows of N, gelu_up_stride apart] or null
  int64_t gelu_up_stride = 0;
};
using GroupedMatMulOp = void(ThreadPool& pool, const MatMulGroup& g, const float* x, int64_t T);
using GroupedMatMulFn = GroupedMatMulOp*;

// A group decomposed into its parts, for a backend (or a path) that gains nothing from one call:
// matmul(w, y) for each weight, then gelu_rows(gate, up, R, n, up_stride, out) (ops/gelu.h) for
// a gelu_gate or gelu_up group. T: the rows of x, as in GroupedMatMul.
template <class MatMulPart, class GeluRows>
void GroupedMatMulParts(const MatMulGroup& g, int64_t T, MatMulPart&& matmul,
                        GeluRows&& gelu_rows) {
  for (int i = 0; i < g.count; ++i) matmul(*g.w[i], g.y[i]);
  const int64_t N = g.w[0]->dim(0);
  if (g.gelu_gate) gelu_rows(g.y[0], g.y[1], int64_t{1}, T * N, T * N, g.y[0]);
  if (g.gelu_up != nullptr) gelu_rows(g.y[0], g.gelu_up, T, N, g.gelu_up_stride, g.y[0]);
}
}  // namespace g4
