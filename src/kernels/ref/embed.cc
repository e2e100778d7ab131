#include "kernels/ref/kernels.h"

namespace g4::ref {

void Embed(ThreadPool&, const TensorView& table, const int32_t* ids, int64_t T, float scale,
           float* out) {
  const int64_t D = table.dim(1);
  for (int64_t t = 0; t < T; ++t) {
    const int64_t row = static_cast<int64_t>(ids[t]) * D;
    for (int64_t d = 0; d < D; ++d) out[t * D + d] = static_cast<float>(static_cast<double>(table.at(row + d)) * scale);
  }
}

}  // namespace g4::ref
