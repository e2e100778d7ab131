// GGUF block quantizers: the encoders of core/gguf_blocks.h's layouts, for tests and the
// synthetic GGUF writer (`g4 make-model --format gguf`). Rows of K elements (K a multiple of the
// block) become K / elems blocks, GgufBlockFormat(kind).bytes each.
//   Q8_0: llama.cpp's reference rule: d = amax / 127, q = round(x / d) (half away from zero),
//         d stored as f16. |error| <= d / 2 (+ the f16 rounding of d, relative 2^-11).
//   Q4_0: llama.cpp's reference rule: m = the element of largest magnitude (signed), d = m / -8,
//         q = min(15, trunc(x / d + 8.5)); |error| <= |d| / 2 except at the clamp (q = 15 where
//         x / d rounds to 16, error <= |d|: the value +m itself maps to q = 0 exactly).
//   Q4_K: a simple (not llama.cpp's iterative) scheme: per sub-block of 32, min = min(0, x),
//         scale = (max - min) / 15; the 8 scales / mins are 6-bit multiples of the block's f16
//         d = max scale / 63 and dmin = max(-min) / 63 (rounded up, so the range is covered);
//         q = clamp(round((x + dmin*m) / (d*sc)), 0, 15). Error <= about one sub-block step
//         d*sc (the 6-bit rounding of sc and m costs up to half a step of d / dmin each).
//   Q6_K: a simple scheme: per sub-block of 16, scale = absmax / 31.5; the 16 int8 scales are
//         multiples of f16 d = max scale / 127; q = clamp(round(x / (d*sc)), -32, 31).
//         Error <= about one step d*sc of the sub-block.
// The 5-bit kinds and Q4_1 are read-only (no quantizer): Unimplemented.
#pragma once

#include <cstdint>

#include "core/status.h"
#include "core/tensor.h"

namespace g4 {

// Whether QuantizeGgufRow can produce `kind`.
bool CanQuantizeGguf(QuantKind kind);

// w: [K] -> out: K / elems blocks (K / elems * bytes bytes). InvalidArgument if K is not a
// positive multiple of the block's element count, Unimplemented for a kind without a quantizer.
// Non-finite inputs are the caller's problem (the writer checks its weights).
Status QuantizeGgufRow(QuantKind kind, const float* w, int64_t K, uint8_t* out);

}  // namespace g4
