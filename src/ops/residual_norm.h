// ResidualNorm: the residual update that closes every Gemma 4 sub-block (attention, MLP, PLE),
// together with the next sub-block's pre-norm, as one op:
//   h[r]   = (h[r] + RmsNorm(x[r]) * w) * scale
//   out[r] = RmsNorm(h[r]) * next_w                      (only when out is not null)
// RmsNorm as in ops/rms_norm.h (plain weights; an empty w means no weight). One op instead of
// four because a device runs each op as its own kernel and a recorded decode step is a chain of
// dependent launches: this cuts six of a layer's ~27 (the row fits one pass either way).
// x: [R, D] the sub-block's output; h: [R, D] the residual stream, updated in place;
// out: [R, D] the next sub-block's input. x, h and out must not overlap.
// With proj, x is first the sub-block's output projection, x = proj_in @ proj^T (ops/matmul.h),
// written to x: at decode rows a device computes the GEMV and the norm in one kernel (the
// grid's last block runs the norm), so a sub-block's end is one launch.
#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "core/thread_pool.h"

namespace g4 {

struct ResidualNormArgs {
  float* x = nullptr;                     // [R, D]; written first when proj is set
  const TensorView* w = nullptr;          // [D] post-norm of x (F32/BF16/F16); null/empty: none
  float* h = nullptr;                     // [R, D] residual stream, in place
  float scale = 1.0f;                     // applied to the whole updated stream (layer scalar)
  const TensorView* next_w = nullptr;     // [D] pre-norm of the next sub-block; null/empty: none
  float* out = nullptr;                   // [R, D] RmsNorm(h) * next_w; nullptr: not computed
  int64_t R = 0, D = 0;
  float eps = 1e-6f;
  const TensorView* proj = nullptr;       // [D, K] output projection; null: x is given
  const float* proj_in = nullptr;         // [R, K] its input, not overlapping x
};

using ResidualNormOp = void(ThreadPool& pool, const ResidualNormArgs& args);
using ResidualNormFn = ResidualNormOp*;

// The op as its parts, for a backend (or a path) without the fused kernel: matmul(w, in, R, y)
// for the projection when there is one, then norm(args) with proj cleared.
template <class MatMulPart, class NormPart>
void ResidualNormParts(const ResidualNormArgs& a, MatMulPart&& matmul, NormPart&& norm) {
  if (a.proj == nullptr) return norm(a);
  matmul(*a.proj, a.proj_in, a.R, a.x);
  ResidualNormArgs n = a;
  n.proj = nullptr;
  n.proj_in = nullptr;
  norm(n);
}

}  // namespace g4
