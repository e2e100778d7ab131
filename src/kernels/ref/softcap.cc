#include <cmath>

#include "kernels/ref/kernels.h"

namespace g4::ref {

void Softcap(ThreadPool&, float* x, int64_t n, float cap) {
  for (int64_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>(cap * std::tanh(static_cast<double>(x[i]) / cap));
  }
}

}  // namespace g4::ref
