#include <vector>

#include "kernels/ref/kernels.h"

namespace g4::ref {

// The unfused sequence, op by op, as the model ran it before the op existed.
void ResidualNorm(ThreadPool& pool, const ResidualNormArgs& a) {
  if (a.R <= 0 || a.D <= 0) return;
  if (a.proj != nullptr) {
    return ResidualNormParts(
        a,
        [&](const TensorView& w, const float* x, int64_t T, float* y) {
          MatMul(pool, w, x, T, y);
        },
        [&](const ResidualNormArgs& n) { ResidualNorm(pool, n); });
  }
  const TensorView none;
  const int64_t n = a.R * a.D;
  std::vector<float> normed(static_cast<size_t>(n));
  RmsNorm(pool, a.x, a.w ? *a.w : none, a.R, a.D, a.eps, normed.data());
  Add(pool, a.h, normed.data(), n, a.h);
  if (a.scale != 1.0f) Scale(pool, a.h, n, a.scale);
  if (a.out) RmsNorm(pool, a.h, a.next_w ? *a.next_w : none, a.R, a.D, a.eps, a.out);
}

}  // namespace g4::ref
