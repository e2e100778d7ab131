// Reference MatMul (y = x @ w^T, ops/matmul.h): f64 accumulation over weights read one element
// at a time. Float weights are widened; quantized weights (core/tensor.h: int4 groups in the
// compressed-tensors nibble order, int8 groups) are dequantized element by element as
// q * scale[n, k / group], exactly as the format defines them; GGUF blocks (the LM head may be
// a tied Q6_K / Q8_0 embedding [V, H]) through core/gguf_blocks.h, block by block. The oracle of
// the CPU kernels.
#include <vector>

#include "core/gguf_blocks.h"
#include "kernels/ref/kernels.h"

namespace g4::ref {
namespace {

// Row n of w, dequantized: out[k] = q(n, k) * scale(n, k / group), in f64 (exact); GGUF rows
// as core/gguf_blocks.h computes them in f32.
void DequantizeRow(const TensorView& w, int64_t n, std::vector<double>& out) {
  const int64_t K = w.dim(1), G = w.quant.group_size, groups = K / G;
  const uint8_t* row = static_cast<const uint8_t*>(w.data) + n * w.quant.row_bytes;
  if (IsGgufBlock(w.quant.kind)) {
    std::vector<float> f(static_cast<size_t>(K));
    DequantizeGgufRow(w.quant.kind, row, K, f.data());
    for (int64_t k = 0; k < K; ++k) out[static_cast<size_t>(k)] = f[static_cast<size_t>(k)];
    return;
  }
  for (int64_t k = 0; k < K; ++k) {
    int q;
    if (w.quant.kind == QuantKind::kInt4Group) {
      const int nibble = (k % 2 == 0) ? (row[k / 2] & 0xf) : (row[k / 2] >> 4);
      q = nibble - 8;
    } else {
      q = static_cast<int8_t>(row[k]);
    }
    const double scale = LoadAsF32(w.quant.scales, w.quant.scale_dtype, n * groups + k / G);
    out[static_cast<size_t>(k)] = q * scale;
  }
}

}  // namespace

void WeightRow(const TensorView& w, int64_t n, std::vector<double>& out) {
  const int64_t K = w.dim(1);
  out.resize(static_cast<size_t>(K));
  if (w.quantized()) {
    DequantizeRow(w, n, out);
  } else {
    for (int64_t k = 0; k < K; ++k) out[static_cast<size_t>(k)] = w.at(n * K + k);
  }
}

void MatMul(ThreadPool&, const TensorView& w, const float* x, int64_t T, float* y) {
  const int64_t N = w.dim(0), K = w.dim(1);
  std::vector<double> row(static_cast<size_t>(K));
  for (int64_t n = 0; n < N; ++n) {
    WeightRow(w, n, row);
    for (int64_t t = 0; t < T; ++t) {
      double acc = 0.0;
      for (int64_t k = 0; k < K; ++k) acc += static_cast<double>(x[t * K + k]) * row[k];
      y[t * N + n] = static_cast<float>(acc);
    }
  }
}

}  // namespace g4::ref
