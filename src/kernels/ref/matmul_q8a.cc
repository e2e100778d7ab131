// Reference MatMulQ8a (ops/matmul_q8a.h): x quantized by QuantizeQ8Blocks, each block's integer
// dot products exact in int32 (Q8Dot), the scaled block sums accumulated in f64. The oracle of
// the CPU kernels (kernels/cpu/matmul_q8a.cc), which must agree to f32 summation accuracy.
#include <vector>

#include "core/dtype.h"
#include "core/q8_blocks.h"
#include "kernels/ref/kernels.h"
#include "ops/matmul_q8a.h"

namespace g4::ref {

void MatMulQ8a(ThreadPool& pool, const TensorView& w, const float* x, int64_t T, float* y) {
  if (!UsesQ8Activations(w, T)) return MatMul(pool, w, x, T, y);
  const int64_t N = w.dim(0), K = w.dim(1), blocks = K / kQ8Block;
  // A weight block: an int4 group of 32 (16 bytes, its scale in quant.scales) or a GGUF block.
  const bool int4 = IsInt4Group32(w);
  const BlockFormat f = int4 ? BlockFormat{kQ8Block, kQ8Block / 2} : GgufBlockFormat(w.quant.kind);
  const int64_t per = f.elems / kQ8Block;  // x blocks under one weight block
  std::vector<int8_t> xq(static_cast<size_t>(K));
  std::vector<float> dx(static_cast<size_t>(blocks));
  std::vector<int32_t> sx(static_cast<size_t>(blocks));
  for (int64_t t = 0; t < T; ++t) {  // x: [T, K], y: [T, N]
    QuantizeQ8Blocks(x + t * K, K, xq.data(), dx.data(), sx.data());
    for (int64_t n = 0; n < N; ++n) {
      const uint8_t* row = static_cast<const uint8_t*>(w.data) + n * w.quant.row_bytes;
      double acc = 0.0;
      for (int64_t b = 0; b < K / f.elems; ++b) {
        const uint8_t* block = row + b * f.bytes;
        const int8_t* xb = xq.data() + b * f.elems;
        if (int4) {  // scale * dx * sum q xq
          const double scale = LoadAsF32(w.quant.scales, w.quant.scale_dtype, n * blocks + b);
          acc += scale * dx[static_cast<size_t>(b)] * Q8Int4GroupDot(block, xb);
        } else {
          acc += Q8Dot(w.quant.kind, block, xb, dx.data() + b * per, sx.data() + b * per);
        }
      }
      y[t * N + n] = static_cast<float>(acc);
    }
  }
}

}  // namespace g4::ref
