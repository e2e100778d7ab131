#include <cmath>

#include "kernels/ref/kernels.h"

namespace g4::ref {

void Rope(ThreadPool&, float* x, const int32_t* positions, int64_t T, int64_t H, int64_t D,
          const float* inv_freq) {
  const int64_t half = D / 2;
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t j = 0; j < half; ++j) {
      const double angle = static_cast<double>(positions[t]) * inv_freq[j];
      const double c = std::cos(angle), s = std::sin(angle);
      for (int64_t h = 0; h < H; ++h) {
        float* v = x + (t * H + h) * D;
        const double a = v[j], b = v[j + half];
        v[j] = static_cast<float>(a * c - b * s);
        v[j + half] = static_cast<float>(b * c + a * s);
      }
    }
  }
}

}  // namespace g4::ref
