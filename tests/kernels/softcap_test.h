// Softcap (ops/softcap.h) against ref::Softcap (cap * tanh(x / cap) in f64) on every backend
// (op_backend.h): caps 30 (Gemma 4's final logits), 1, 50 and 0.5, inputs spanning the linear
// and saturated ranges plus specials, odd lengths, misaligned buffers.
// Tolerance, CPU: |out - ref| <= 8 * 2^-24 * |ref| (~4.8e-7 relative): Highway's f32 Tanh is
// documented to 4 ulp, the division x / cap and the product by cap round once each, and
// tanh'(y) * y / tanh(y) <= 1, so the division's rounding is not amplified. CUDA (f32 tanhf):
// 1e-5 of |ref| + 1e-6 absolute.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/op_backend.h"
#include "kernels/ref/kernels.h"
#include "kernels/test_util.h"

namespace g4::testing {

inline const double kSoftcapCpuTol = 8 * std::ldexp(1.0, -24);

inline std::vector<float> SoftcapLogits(int64_t n, uint32_t seed, float cap) {
  std::vector<float> x = RandomFloats(n, seed, -4 * cap, 4 * cap);
  const float specials[] = {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-4f, 1e4f, -1e4f, 3e38f, -3e38f};
  for (size_t i = 0; i < sizeof(specials) / sizeof(specials[0]) && i < x.size(); ++i) {
    x[(i * 104729) % x.size()] = specials[i];
  }
  return x;
}

class SoftcapTest : public OpBackendTest {};

TEST_P(SoftcapTest, MatchesRef) {
  // (relative tolerance, absolute floor of the scale)
  const double tol = backend().device ? 1e-5 : kSoftcapCpuTol;
  const double floor = backend().device ? 0.1 : 0.0;
  uint32_t seed = 1;
  for (float cap : {30.0f, 1.0f, 50.0f, 0.5f}) {
    for (int64_t n : {1, 7, 15, 16, 17, 33, 1000, 262147}) {
      for (bool misalign : {false, true}) {
        SCOPED_TRACE("cap=" + std::to_string(cap) + " n=" + std::to_string(n) +
                     " misalign=" + std::to_string(misalign));
        const std::vector<float> xv = SoftcapLogits(n, seed++, cap);
        std::vector<float> ref = xv;
        ref::Softcap(pool(), ref.data(), n, cap);
        FloatBuffer x(xv, misalign);
        ops().softcap(pool(), x.data(), n, cap);
        ASSERT_LE(MaxScaledError(x.ToVector(n), ref, floor), tol);
      }
    }
  }
}

}  // namespace g4::testing
