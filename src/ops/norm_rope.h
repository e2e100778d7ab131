// NormRope: Gemma 4's per-head query/key normalization followed by RoPE, as one op, in place:
//   x[t, h] = Rope(RmsNorm(x[t, h]) * w, positions[t], inv_freq)
// RmsNorm as ops/rms_norm.h over each head's D values (w: [D], empty: no weight); Rope as
// ops/rope.h (NeoX half split, angles in f64; inv_freq == nullptr: no rotation, the norm only).
// One op instead of two because a device runs each op as its own launch (a recorded decode
// step is a chain of them) while both need only the head's D values.
// x: [T, H, D] f32; positions: [T]; inv_freq: [D/2] or nullptr.
#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "core/thread_pool.h"

namespace g4 {
using NormRopeFn = void (*)(ThreadPool& pool, float* x, const TensorView& w,
                            const int32_t* positions, int64_t T, int64_t H, int64_t D, float eps,
                            const float* inv_freq);
}  // namespace g4
