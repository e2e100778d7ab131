// RmsNorm, row by row, exactly as HF Gemma4RMSNorm: y = x / sqrt(mean(x^2) + eps) * w.
// Plain w, never (1 + w). An empty `w` means no weight (Gemma 4's v_norm).
// x, out: [R, D] f32 (may alias); w: [D] in a float dtype, or empty.
#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "core/thread_pool.h"

namespace g4 {
using RmsNormOp = void(ThreadPool& pool, const float* x, const TensorView& w, int64_t R, int64_t D,
                       float eps, float* out);
using RmsNormFn = RmsNormOp*;
}  // namespace g4
