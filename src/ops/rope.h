// Rope: rotary position embedding in the NeoX half-split convention, in place.
// For each pair (j, j + D/2): angle = pos * inv_freq[j] (computed in f64),
//   x[j]       = x[j] * cos - x[j + D/2] * sin
//   x[j + D/2] = x[j + D/2] * cos + x[j] * sin
// x: [T, H, D] f32; positions: [T] absolute positions; inv_freq: [D/2] (0 leaves a pair as is,
// which is how proportional RoPE passes its unrotated dimensions through).
#pragma once

#include <cstdint>

#include "core/thread_pool.h"

namespace g4 {
using RopeOp = void(ThreadPool& pool, float* x, const int32_t* positions, int64_t T, int64_t H,
                    int64_t D, const float* inv_freq);
using RopeFn = RopeOp*;
}  // namespace g4
