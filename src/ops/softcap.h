// Softcap: x = cap * tanh(x / cap), in place, the final logit softcap (cap 30 on Gemma 4).
// x: [n] f32.
#pragma once

#include <cstdint>

#include "core/thread_pool.h"

namespace g4 {
using SoftcapOp = void(ThreadPool& pool, float* x, int64_t n, float cap);
using SoftcapFn = SoftcapOp*;
}  // namespace g4
