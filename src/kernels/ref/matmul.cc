#include "kernels/ref/kernels.h"

namespace g4::ref {

void MatMul(ThreadPool&, const TensorView& w, const float* x, int64_t T, float* y) {
  const int64_t N = w.dim(0), K = w.dim(1);
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t n = 0; n < N; ++n) {
      double acc = 0.0;
      for (int64_t k = 0; k < K; ++k) acc += static_cast<double>(x[t * K + k]) * w.at(n * K + k);
      y[t * N + n] = static_cast<float>(acc);
    }
  }
}

}  // namespace g4::ref
