// MatMulQ8a: MatMul (ops/matmul.h) with int8 activations where that is defined: one decode row
// or several (T > 1: prefill chunks, batches) against Q4_0, Q5_0, Q8_0, Q4_K or Q6_K GGUF blocks
// (HasQ8Dot), as llama.cpp computes every quantized matmul, and against W4A16's int4 groups of 32
// where the backend packed them (Q4_0's arithmetic, see UsesQ8Activations). Each row of x is cut
// into blocks of 32 and quantized (QuantizeQ8Blocks, core/q8_blocks.h: xq, dx); each block of 32
// weights times its 32 xq is an exact integer dot product (Q8Dot):
//   y[t, n] = sum_b dw[n, b] * dx[t, b] * sum_{j < 32} q[n, b, j] * xq[t, b, j]
// (Q4_K: per sub-block of 32, d * sc * dx * sum u xq - dmin * m * dx * sum xq; Q6_K: per group of
// 16, d * sc * dx * sum (u - 32) xq). Every other call is MatMul itself. Integer products replace
// the f32 dequantize-and-FMA work, which is what bounds the exact kernels on the CPU
// (docs/speed.md); the price is x's rounding to 8 bits, measured on the real checkpoint in
// docs/speed.md. A backend runs it when created with MatVec::kQ8 (ops/backend.h); the default,
// MatVec::kExact, keeps MatMul everywhere.
#pragma once

#include <memory>

#include "core/q8_blocks.h"
#include "core/tensor.h"
#include "core/thread_pool.h"

namespace g4 {

// Whether MatMulQ8a quantizes x for this call (otherwise it is MatMul). An int4 group-32
// weight (IsInt4Group32, W4A16) takes Q4_0's integer dot products, under its own scales, only
// where the backend packed it at load (PackWeightFn below): the packer checks once that every
// scale is an f16, so that its Q4_0 panels give the same weights; elsewhere it stays MatMul.
inline bool UsesQ8Activations(const TensorView& w, int64_t T) {
  if (T < 1 || w.shape.size() != 2 || w.dim(1) <= 0) return false;
  if (IsInt4Group32(w)) return w.quant.panels != nullptr;  // a group divides K
  return HasQ8Dot(w.quant.kind) && w.dim(1) % GgufBlockFormat(w.quant.kind).elems == 0;
}

// A backend's load-time layout of a weight for its MatMulQ8a (the CPU's: 16-row panels that
// decode and prefill stream, kernels/cpu/matmul_q8a_packed.h), or null panels when it has none
// for w. w may be an [E, N, K] expert stack (its E * N rows in order). The caller sets
// w.quant's panels, panel_rows and panel_bytes from it (SetPanels) and keeps it alive while w
// is used.
struct PackedWeight {
  std::shared_ptr<const void> panels;
  int64_t panel_rows = 0, panel_bytes = 0;
};
using PackWeightOp = PackedWeight(ThreadPool& pool, const TensorView& w);
using PackWeightFn = PackWeightOp*;

inline void SetPanels(const PackedWeight& p, TensorView* w) {
  w->quant.panels = p.panels.get();
  w->quant.panel_rows = p.panel_rows;
  w->quant.panel_bytes = p.panel_bytes;
}

}  // namespace g4
