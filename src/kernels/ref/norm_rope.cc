#include "kernels/ref/kernels.h"

namespace g4::ref {

// Each part as the two ops in sequence, then the KvWrite, as the model ran them before.
void NormRope(ThreadPool& pool, const NormRopeArgs& a) {
  NormRopeEach(
      a, [&](float* x, const TensorView& w, int64_t R) { RmsNorm(pool, x, w, R, a.D, a.eps, x); },
      [&](float* x, int64_t H) { Rope(pool, x, a.positions, a.T, H, a.D, a.inv_freq); },
      [&](const KvWriteArgs& kv) { KvWrite(pool, kv); });
}

}  // namespace g4::ref
