// GeluMul: out = gelu_tanh(gate) * up, the gated activation of the Gemma MLP and PLE branch,
// over R rows of n: out[r, i] = gelu_tanh(gate[r, i]) * up[r * up_stride + i].
// gelu_tanh(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), evaluated in f32 (not a lookup
// table, not the erf form). gate, out: [R, n] f32; up: R rows of n floats, up_stride apart
// (>= n: the PLE branch reads one layer's rows of its [R, L, P] inputs, so a prefill chunk is
// one op, not one per row). out may alias gate, or up when up_stride == n.
#pragma once

#include <cstdint>

#include "core/thread_pool.h"

namespace g4 {
using GeluMulOp = void(ThreadPool& pool, const float* gate, const float* up, int64_t R, int64_t n,
                       int64_t up_stride, float* out);
using GeluMulFn = GeluMulOp*;
}  // namespace g4
