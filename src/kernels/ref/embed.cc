// Reference Embed (ops/embed.h): rows widened (float tables) or dequantized (GGUF block tables,
// core/gguf_blocks.h: token_embd / per_layer_token_embd are Q6_K in Google's QAT GGUFs), times
// scale in f64, rounded to f32.
#include <vector>

#include "core/gguf_blocks.h"
#include "kernels/ref/kernels.h"

namespace g4::ref {

void Embed(ThreadPool&, const TensorView& table, const int32_t* ids, int64_t T, float scale,
           float* out) {
  const int64_t D = table.dim(1);
  std::vector<float> row(IsGgufBlock(table.quant.kind) ? static_cast<size_t>(D) : 0);
  for (int64_t t = 0; t < T; ++t) {
    const int64_t id = ids[t];
    if (IsGgufBlock(table.quant.kind)) {
      DequantizeGgufRow(table.quant.kind, static_cast<const uint8_t*>(table.data) + id * table.quant.row_bytes, D,
                        row.data());
      for (int64_t d = 0; d < D; ++d) out[t * D + d] = static_cast<float>(static_cast<double>(row[d]) * scale);
      continue;
    }
    for (int64_t d = 0; d < D; ++d) {
      out[t * D + d] = static_cast<float>(static_cast<double>(table.at(id * D + d)) * scale);
    }
  }
}

}  // namespace g4::ref
