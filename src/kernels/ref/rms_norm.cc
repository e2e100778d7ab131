#include <cmath>

#include "kernels/ref/kernels.h"

namespace g4::ref {

void RmsNorm(ThreadPool&, const float* x, const TensorView& w, int64_t R, int64_t D, float eps,
             float* out) {
  for (int64_t r = 0; r < R; ++r) {
    const float* xr = x + r * D;
    double ss = 0.0;
    for (int64_t d = 0; d < D; ++d) ss += static_cast<double>(xr[d]) * xr[d];
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(D) + eps);
    for (int64_t d = 0; d < D; ++d) {
      const double wd = w.empty() ? 1.0 : w.at(d);
      out[r * D + d] = static_cast<float>(xr[d] * inv * wd);
    }
  }
}

}  // namespace g4::ref
