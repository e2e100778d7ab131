// GeluMul: out = gelu_tanh(gate) * up, the gated activation of the Gemma MLP and PLE branch.
// gelu_tanh(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), evaluated in f32 (not a lookup
// table, not the erf form). gate, up, out: [n] f32; out may alias gate or up.
#pragma once

#include <cstdint>

#include "core/thread_pool.h"

namespace g4 {
using GeluMulFn = void (*)(ThreadPool& pool, const float* gate, const float* up, int64_t n,
                           float* out);
}  // namespace g4
