#include <cmath>

#include "kernels/ref/kernels.h"

namespace g4::ref {

double GeluTanh(double x) {
  constexpr double kSqrt2OverPi = 0.79788456080286535588;
  return 0.5 * x * (1.0 + std::tanh(kSqrt2OverPi * (x + 0.044715 * x * x * x)));
}

void GeluMul(ThreadPool&, const float* gate, const float* up, int64_t R, int64_t n,
             int64_t up_stride, float* out) {
  for (int64_t r = 0; r < R; ++r) {
    for (int64_t i = 0; i < n; ++i) {
      out[r * n + i] = static_cast<float>(GeluTanh(gate[r * n + i]) * up[r * up_stride + i]);
    }
  }
}

}  // namespace g4::ref
