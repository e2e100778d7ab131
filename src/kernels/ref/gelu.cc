#include <cmath>

#include "kernels/ref/kernels.h"

namespace g4::ref {

double GeluTanh(double x) {
  constexpr double kSqrt2OverPi = 0.79788456080286535588;
  return 0.5 * x * (1.0 + std::tanh(kSqrt2OverPi * (x + 0.044715 * x * x * x)));
}

void GeluMul(ThreadPool&, const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(GeluTanh(gate[i]) * up[i]);
}

}  // namespace g4::ref
