#include "kernels/ref/kernels.h"

namespace g4::ref {

// The two ops in sequence, as the model ran them before NormRope existed.
void NormRope(ThreadPool& pool, float* x, const TensorView& w, const int32_t* positions,
              int64_t T, int64_t H, int64_t D, float eps, const float* inv_freq) {
  RmsNorm(pool, x, w, T * H, D, eps, x);
  if (inv_freq != nullptr) Rope(pool, x, positions, T, H, D, inv_freq);
}

}  // namespace g4::ref
