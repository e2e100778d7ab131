// Weight quantization: the encoder of the layouts in core/tensor.h (QuantKind). Used by the
// synthetic checkpoint writer (`g4 make-model --quant w4a16`, compressed-tensors int4 groups)
// and by load-time copies of bf16 weights (the LM head as int8 per row or int4 groups).
// Symmetric, round to nearest even, like compressed-tensors' minmax observer:
//   int4: scale = absmax(group) / 7.5, q = clamp(round(w / scale), -8, 7), stored q + 8;
//   int8: scale = absmax(group) / 127, q = clamp(round(w / scale), -127, 127).
// The scale is rounded to its storage dtype before q is computed, so q * stored_scale is the
// value a reader reconstructs. An all-zero group gets scale 0 and q 0.
#pragma once

#include <cstdint>
#include <memory>

#include "core/status.h"
#include "core/tensor.h"
#include "core/thread_pool.h"

namespace g4 {

// Bytes of one stored row of K elements: int4 rows are whole little-endian int32 words of 8
// nibbles (compressed-tensors' [N, ceil(K/8)] I32 layout), int8 rows are K bytes.
int64_t QuantRowBytes(QuantKind kind, int64_t K);

// Quantizes w[0, K) into row (QuantRowBytes bytes; int4 padding nibbles are 0) and
// scales[0, K / group) stored as scale_dtype (F32, BF16 or F16). group must divide K.
void QuantizeRow(const float* w, int64_t K, QuantKind kind, int64_t group, DType scale_dtype,
                 uint8_t* row, void* scales);

// A quantized copy of a weight, owning its buffers; `view` points into `storage`.
struct QuantizedWeight {
  std::shared_ptr<const void> storage;
  TensorView view;
};

// Quantizes a float [N, K] weight (F32/BF16/F16, or GGUF blocks, decoded row by row) on
// `pool`, into int4 / int8 groups, or into GGUF blocks of a kind with a quantizer
// (ops/quantize_gguf.h; group and scale_dtype are then the block's own). InvalidArgument if w
// is not a 2-D float or GGUF block tensor, or group (the block) does not divide K.
StatusOr<QuantizedWeight> QuantizeWeight(ThreadPool& pool, const TensorView& w, QuantKind kind,
                                         int64_t group, DType scale_dtype);

}  // namespace g4
