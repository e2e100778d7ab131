// GGUF (ggml) block dequantization, scalar and block by block: the reference every GGUF kernel
// is tested against (TensorView::at, ref::MatMul/Embed and the CPU kernels' tests use it).
// Layouts: ../shared/spec/formats.md §2.3 for Q4_0, Q8_0, Q4_K, Q6_K; Q4_1, Q5_0, Q5_1, Q5_K as
// ggml defines them (ggml-common.h / ggml-quants.c), cross-checked against the PyPI `gguf`
// package's numpy dequantization (tests/data/gguf_blocks, scripts/make_gguf_block_fixture.py).
// All multi-byte fields are little-endian; `half` is IEEE binary16. Arithmetic is f32 in ggml's
// order ((d * sc) * q - dmin * m), so results match ggml's scalar dequantization exactly.
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace g4 {

// The half (IEEE binary16, little-endian) at p, as f32: a block's d or dmin. Byte copies: blocks
// sit at any byte offset.
float GgufHalf(const uint8_t* p);

// The 6-bit scale and min of sub-block j (0..7) of a Q4_K / Q5_K block's 12 scale bytes.
// j < 4: low 6 bits of scales[j] / scales[j + 4]; j >= 4: low / high nibble of scales[j + 4]
// with the top two bits of scales[j - 4] (scale) and of scales[j] (min).
void GgufScaleMinK4(const uint8_t* scales, int j, int* sc, int* m);

// One block of a GGUF kind (kind must be one of kQ4_0 .. kQ6_K): GgufBlockFormat(kind).elems
// values into out.
void DequantizeGgufBlock(QuantKind kind, const uint8_t* block, float* out);

// A row of K elements (K a multiple of the block's element count): K / elems consecutive blocks.
void DequantizeGgufRow(QuantKind kind, const uint8_t* row, int64_t K, float* out);

}  // namespace g4
