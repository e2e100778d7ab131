// TensorView helpers; the quantized layouts read here are the ones tensor.h documents and the
// kernels (src/kernels/*/matmul*.cc) implement.
#include "core/tensor.h"

#include <cctype>

#include "core/gguf_blocks.h"

namespace g4 {

const char* QuantKindName(QuantKind kind) {
  switch (kind) {
    case QuantKind::kNone: return "";
    case QuantKind::kInt4Group: return "int4";
    case QuantKind::kInt8Group: return "int8";
    case QuantKind::kQ4_0: return "q4_0";
    case QuantKind::kQ4_1: return "q4_1";
    case QuantKind::kQ5_0: return "q5_0";
    case QuantKind::kQ5_1: return "q5_1";
    case QuantKind::kQ8_0: return "q8_0";
    case QuantKind::kQ4_K: return "q4_k";
    case QuantKind::kQ5_K: return "q5_k";
    case QuantKind::kQ6_K: return "q6_k";
  }
  return "?";
}

BlockFormat GgufBlockFormat(QuantKind kind) {
  switch (kind) {
    case QuantKind::kQ4_0: return {32, 18};
    case QuantKind::kQ4_1: return {32, 20};
    case QuantKind::kQ5_0: return {32, 22};
    case QuantKind::kQ5_1: return {32, 24};
    case QuantKind::kQ8_0: return {32, 34};
    case QuantKind::kQ4_K: return {256, 144};
    case QuantKind::kQ5_K: return {256, 176};
    case QuantKind::kQ6_K: return {256, 210};
    default: return {};
  }
}

size_t TensorView::nbytes() const {
  if (!quantized()) return static_cast<size_t>(numel()) * DTypeSize(dtype);
  return static_cast<size_t>(numel() / shape.back() * quant.row_bytes);  // rows * row bytes
}

size_t TensorView::scale_nbytes() const {
  if (!quantized() || quant.group_size <= 0 || quant.scales == nullptr) return 0;
  const int64_t K = shape.back();
  return static_cast<size_t>(numel() / K * (K / quant.group_size)) * DTypeSize(quant.scale_dtype);
}

float TensorView::at(int64_t i) const {
  if (!quantized()) return LoadAsF32(data, dtype, i);
  const int64_t K = shape.back(), n = i / K, k = i % K;
  const uint8_t* row = static_cast<const uint8_t*>(data) + n * quant.row_bytes;
  if (IsGgufBlock(quant.kind)) {  // dequantize the one block holding element k
    const BlockFormat f = GgufBlockFormat(quant.kind);
    float block[256];  // the largest block (K-quants)
    DequantizeGgufBlock(quant.kind, row + (k / f.elems) * f.bytes, block);
    return block[k % f.elems];
  }
  int q;
  if (quant.kind == QuantKind::kInt4Group) {
    const uint8_t byte = row[k / 2];
    q = static_cast<int>((k % 2) ? (byte >> 4) : (byte & 0xf)) - 8;
  } else {
    q = static_cast<int8_t>(row[k]);
  }
  const float scale = LoadAsF32(quant.scales, quant.scale_dtype,
                                n * (K / quant.group_size) + k / quant.group_size);
  return static_cast<float>(q) * scale;
}

std::string ShapeToString(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

namespace {
std::string Lower(const char* s) {
  std::string out;
  for (; *s; ++s) out += static_cast<char>(std::tolower(static_cast<unsigned char>(*s)));
  return out;
}
}  // namespace

std::string StorageName(const TensorView& t) {
  if (!t.quantized()) return Lower(DTypeName(t.dtype));
  if (IsGgufBlock(t.quant.kind)) return QuantKindName(t.quant.kind);  // scales live in blocks
  // Appends, not operator+ chains: GCC 12 reports a false -Wrestrict on those.
  std::string s = QuantKindName(t.quant.kind);
  if (t.shape.size() == 2 && t.quant.group_size == t.dim(1)) {
    s += "row";
  } else {
    s += 'g';
    s += std::to_string(t.quant.group_size);
  }
  s += '/';
  s += Lower(DTypeName(t.quant.scale_dtype));
  return s;
}

}  // namespace g4
