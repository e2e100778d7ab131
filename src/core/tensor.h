// A non-owning, read-only view of a tensor: pointer, dtype and shape (row-major, PyTorch
// dimension order). Weights are views into the memory-mapped checkpoint; they are never copied.
//
// A view may also describe a quantized 2-D weight [N, K] (QuantInfo): `shape` stays the logical
// [N, K] and ops that take a weight (MatMul) dispatch on `quant.kind`, so the model code is the
// same for float and quantized checkpoints. The int4 layout is exactly compressed-tensors'
// "pack-quantized" (../shared/spec/formats.md §1.3-1.4): row n is `quant.row_bytes` bytes at
// data + n * row_bytes; element k sits in byte k / 2, low nibble for even k, high nibble for odd
// k (8 nibbles per little-endian int32 word, least significant first); stored nibble = q + 8 with
// q in [-8, 7]; w[n, k] = q * scale[n, k / group_size], scales [N, K / group_size].
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.h"

namespace g4 {

enum class QuantKind : uint8_t {
  kNone,       // plain elements of `dtype`
  kInt4Group,  // symmetric int4, per-(row, group) scales, compressed-tensors nibble order
  kInt8Group,  // symmetric int8 (q in [-127, 127], one int8 per element), per-(row, group) scales
  // GGUF (ggml) blocks, ../shared/spec/formats.md §2.2-2.3: each row of [N, K] is K / elems
  // blocks of `bytes` bytes with their scales inside (QuantInfo::scales is null, group_size is
  // the block's element count, row_bytes = K / elems * bytes).
  kQ4_0,
  kQ4_1,
  kQ5_0,
  kQ5_1,
  kQ8_0,
  kQ4_K,
  kQ5_K,
  kQ6_K,
};

// "int4", "int8", "q4_0", ..., "q6_k", or "" for kNone.
const char* QuantKindName(QuantKind kind);

// Elements and bytes of one GGUF block; {0, 0} for the non-GGUF kinds.
struct BlockFormat {
  int64_t elems = 0;
  int64_t bytes = 0;
};
BlockFormat GgufBlockFormat(QuantKind kind);
inline bool IsGgufBlock(QuantKind kind) { return GgufBlockFormat(kind).elems > 0; }

struct QuantInfo {
  QuantKind kind = QuantKind::kNone;
  const void* scales = nullptr;  // [N, K / group_size] of scale_dtype
  DType scale_dtype = DType::kBF16;
  int64_t group_size = 0;        // divides K; K itself means one scale per row
  int64_t row_bytes = 0;         // bytes from one packed row to the next (>= K / 2 or K)
  // The same weight repacked at load for one backend's kernels (PackWeightFn,
  // ops/matmul_q8a.h), or null. Opaque: kernels that do not know it read `data`.
  const void* panels = nullptr;
  // The panels hold the rows in order, panel_rows rows in each panel_bytes: a slice of rows
  // that starts on a panel (an expert of a stack, ExpertRows) reads its own. 0: whole only.
  int64_t panel_rows = 0, panel_bytes = 0;
};

struct TensorView {
  const void* data = nullptr;
  // Element type of a float tensor. For a quantized view: the container of `data` (U8 for
  // packed int4 nibbles, I8 for int8), never used to read values.
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;  // logical shape; [N, K] (or [E, N, K]) for a quantized weight
  QuantInfo quant;

  TensorView() = default;
  TensorView(const void* d, DType t, std::vector<int64_t> s, QuantInfo q = {})
      : data(d), dtype(t), shape(std::move(s)), quant(q) {}

  bool empty() const { return data == nullptr; }
  bool quantized() const { return quant.kind != QuantKind::kNone; }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  int64_t dim(int i) const { return shape[static_cast<size_t>(i)]; }
  // Bytes of `data` (packed rows for a quantized view, without the scales).
  size_t nbytes() const;
  // Bytes of the scales of a quantized view; 0 otherwise.
  size_t scale_nbytes() const;
  // Element i (row-major) as f32; a quantized element is dequantized (q * scale, exact in f32
  // for 16-bit scales). Slow: for reference kernels and tests.
  float at(int64_t i) const;
};

// "[2048, 1536]"
std::string ShapeToString(const std::vector<int64_t>& shape);

// What a weight is stored as, for policy lines and profiles: "bf16", "f32", "int4g32/bf16"
// (int4, groups of 32, bf16 scales), "int8row/f32" (one scale per row).
std::string StorageName(const TensorView& t);

}  // namespace g4
