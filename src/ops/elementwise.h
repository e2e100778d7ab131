// Elementwise helpers of the residual stream.
// Add: out = a + b; Scale: x *= s. All [n] f32; out may alias a or b.
#pragma once

#include <cstdint>

#include "core/thread_pool.h"

namespace g4 {
using AddOp = void(ThreadPool& pool, const float* a, const float* b, int64_t n, float* out);
using AddFn = AddOp*;
using ScaleOp = void(ThreadPool& pool, float* x, int64_t n, float s);
using ScaleFn = ScaleOp*;
}  // namespace g4
