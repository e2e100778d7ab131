// Embed: a gather of table rows widened to f32 and multiplied by `scale`.
// table: [V, D] in a float dtype, or GGUF blocks (core/tensor.h; rows dequantized as
// core/gguf_blocks.h defines them); ids: [T], each in [0, V) (callers validate); out: [T, D] f32.
#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "core/thread_pool.h"

namespace g4 {
using EmbedOp = void(ThreadPool& pool, const TensorView& table, const int32_t* ids, int64_t T,
                     float scale, float* out);
using EmbedFn = EmbedOp*;
}  // namespace g4
