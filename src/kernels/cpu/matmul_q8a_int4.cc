// Int4 groups of 32 as Q4_0 panels (matmul_q8a_int4.h).
#include "kernels/cpu/matmul_q8a_int4.h"

#include <algorithm>
#include <vector>

#include "core/dtype.h"
#include "core/q8_blocks.h"
#include "kernels/cpu/matmul_q8a_packed.h"
#include "kernels/cpu/q8_blocks.h"

namespace g4::cpu {
namespace {

int64_t Q4_0Bytes() { return GgufBlockFormat(QuantKind::kQ4_0).bytes; }

}  // namespace

PackedWeight PackQ8aInt4Panels(ThreadPool& pool, const TensorView& w) {
  if (!IsInt4Group32(w) || w.shape.size() != 2) return {};
  const int64_t N = w.dim(0), K = w.dim(1), groups = K / kQ8Block;
  const int64_t block_bytes = Q4_0Bytes();
  return PackQ8aPanelsFrom(pool, QuantKind::kQ4_0, N, K, [&](int64_t p, uint8_t* rows) {
    const int64_t n0 = p * kQ8aPanelRows, n1 = std::min(N, n0 + kQ8aPanelRows);
    for (int64_t n = n0; n < n1; ++n) {
      for (int64_t g = 0; g < groups; ++g) {
        if (!Int4GroupToQ4_0(w, n, g, rows + ((n - n0) * groups + g) * block_bytes)) return false;
      }
    }
    return true;
  });
}

TensorView Int4PanelsAsQ4_0(const TensorView& w) {
  TensorView q = w;
  q.quant.kind = QuantKind::kQ4_0;
  q.quant.scales = nullptr;
  q.quant.row_bytes = w.dim(1) / kQ8Block * Q4_0Bytes();
  return q;
}

void MatMulQ8aInt4Rows(ThreadPool& pool, const TensorView& w, const float* x, int64_t T,
                       float* y) {
  const int64_t N = w.dim(0), K = w.dim(1), groups = K / kQ8Block;
  std::vector<int8_t> xq(static_cast<size_t>(T * K));
  std::vector<float> dx(static_cast<size_t>(T * groups));
  std::vector<int32_t> sx(static_cast<size_t>(T * groups));
  for (int64_t t = 0; t < T; ++t) {  // x: [T, K], y: [T, N]
    cpu::QuantizeQ8Blocks(x + t * K, K, xq.data() + t * K, dx.data() + t * groups,
                          sx.data() + t * groups);
  }
  pool.ParallelFor(N, 16, [&](int64_t b, int64_t e) {
    for (int64_t n = b; n < e; ++n) {
      const uint8_t* row = static_cast<const uint8_t*>(w.data) + n * w.quant.row_bytes;
      for (int64_t t = 0; t < T; ++t) {
        float acc = 0.0f;
        for (int64_t g = 0; g < groups; ++g) {
          const float scale = LoadAsF32(w.quant.scales, w.quant.scale_dtype, n * groups + g);
          acc += scale * dx[static_cast<size_t>(t * groups + g)] *
                 static_cast<float>(Q8Int4GroupDot(row + g * kQ8Block / 2,
                                                   xq.data() + t * K + g * kQ8Block));
        }
        y[t * N + n] = acc;
      }
    }
  });
}

}  // namespace g4::cpu
