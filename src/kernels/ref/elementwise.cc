#include "kernels/ref/kernels.h"

namespace g4::ref {

void Add(ThreadPool&, const float* a, const float* b, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

void Scale(ThreadPool&, float* x, int64_t n, float s) {
  for (int64_t i = 0; i < n; ++i) x[i] *= s;
}

}  // namespace g4::ref
