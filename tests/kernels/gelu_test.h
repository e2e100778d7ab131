// GeluMul (ops/gelu.h) against ref::GeluMul (tanh-form GELU in f64) on every backend
// (op_backend.h): random and special inputs, odd lengths (SIMD tails), misaligned and aliased
// buffers, rows of `up` a stride apart.
// Tolerance per element, CPU: |out - ref| <= (2 + |u|) * 2^-22 * |ref| + 2^-50 * |gate * up|,
// with u = sqrt(2/pi) (x + 0.044715 x^3), i.e. ~1e-6 relative for |x| <= 3. Why the |u| term:
// any f32 evaluation rounds u (relative 2^-24) and gelu(x) = x * sigmoid(2u) has
// d ln(gelu)/du <= 2, so the exponent alone carries ~|u| * 2^-23 of relative error where gelu is
// tiny (x << 0). The absolute term is the ref's own f64 limit: it computes 1 + tanh(u) by
// cancellation, which is exact only to ~2^-53 * |x| (it returns 0 below x ~ -9 where the true
// value is ~1e-30).
// CUDA (f32 with tanhf, <= 2 ulp): about 1e-6 relative; tolerance 1e-5 of |ref| + 1e-6 absolute.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "kernels/op_backend.h"
#include "kernels/ref/kernels.h"
#include "kernels/test_util.h"

namespace g4::testing {

// max over i of |out - ref| / tolerance_i (pass: <= 1).
inline double GeluErrorOverTol(const std::vector<float>& gate, const std::vector<float>& up,
                       const std::vector<float>& out, const std::vector<float>& ref) {
  double worst = 0.0;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == ref[i]) continue;  // also equal infinities (huge gate * up overflows in both)
    const double x = gate[i];
    const double u = 0.7978845608028654 * (x + 0.044715 * x * x * x);
    const double tol =
        (2.0 + std::fabs(u)) * std::ldexp(1.0, -22) * std::fabs(ref[i]) +
        std::ldexp(1.0, -50) * std::fabs(x * up[i]) + std::numeric_limits<float>::denorm_min();
    const double e = std::fabs(static_cast<double>(out[i]) - ref[i]) / tol;
    if (!(e <= worst)) worst = e;  // also propagates NaN
  }
  return worst;
}

inline std::vector<float> GeluGates(int64_t n, uint32_t seed) {
  std::vector<float> g = RandomFloats(n, seed, -8.0f, 8.0f);
  // Special values where a careless formula breaks: zeros, tiny, the cancellation region of the
  // tanh form, and values whose cube overflows f32.
  const float specials[] = {0.0f, -0.0f, 1e-20f, -1e-20f, 1e-3f, -1e-3f, -3.0f, -5.0f, -7.5f,
                            -10.0f, -20.0f, 20.0f, 50.0f, -50.0f, 1e13f, -1e13f, 3e38f, -3e38f};
  for (size_t i = 0; i < sizeof(specials) / sizeof(specials[0]) && i < g.size(); ++i) {
    g[(i * 7919) % g.size()] = specials[i];
  }
  return g;
}

// out's error against ref in units of the backend's tolerance (above): pass <= 1.
inline double GeluError(const OpBackend& b, const std::vector<float>& gate,
                        const std::vector<float>& up, const std::vector<float>& out,
                        const std::vector<float>& ref) {
  return b.device ? MaxScaledError(out, ref, 0.1) / 1e-5 : GeluErrorOverTol(gate, up, out, ref);
}

class GeluTest : public OpBackendTest {};

TEST_P(GeluTest, MatchesRef) {
  uint32_t seed = 1;
  for (int64_t n : {1, 7, 15, 16, 17, 33, 1000, 100003}) {
    // mode 0: out separate, 1: out = gate, 2: out = up, 3: misaligned buffers.
    for (int mode = 0; mode < 4; ++mode) {
      SCOPED_TRACE("n=" + std::to_string(n) + " mode=" + std::to_string(mode));
      const std::vector<float> gv = GeluGates(n, seed++);
      const std::vector<float> uv = RandomFloats(n, seed++, -2.0f, 2.0f);
      FloatBuffer gate(gv, mode == 3), up(uv, mode == 3), out(n, mode == 3);
      float* dst = mode == 1 ? gate.data() : mode == 2 ? up.data() : out.data();
      std::vector<float> ref(static_cast<size_t>(n));
      ref::GeluMul(pool(), gv.data(), uv.data(), 1, n, n, ref.data());
      ops().gelu_mul(pool(), gate.data(), up.data(), 1, n, n, dst);
      const std::vector<float> got(dst, dst + n);
      ASSERT_LE(GeluError(backend(), gv, uv, got, ref), 1.0);
    }
  }
}

// Rows whose `up` lies up_stride apart (the PLE branch's one layer of [R, L, P]), in place on
// gate, against the ref; elements between the rows of up are never read (NaN there).
TEST_P(GeluTest, StridedRowsMatchRef) {
  uint32_t seed = 50;
  for (int64_t R : {1, 2, 9}) {
    for (int64_t n : {1, 17, 256}) {
      SCOPED_TRACE("R=" + std::to_string(R) + " n=" + std::to_string(n));
      const int64_t stride = 3 * n + 5;
      const std::vector<float> gv = GeluGates(R * n, seed++);
      std::vector<float> uv(static_cast<size_t>(R * stride), std::nanf(""));
      const std::vector<float> rows = RandomFloats(R * n, seed++, -2.0f, 2.0f);
      for (int64_t r = 0; r < R; ++r) {
        std::copy_n(rows.begin() + r * n, n, uv.begin() + r * stride + n);
      }
      std::vector<float> gate = gv, ref(gv.size());
      ref::GeluMul(pool(), gv.data(), uv.data() + n, R, n, stride, ref.data());
      ops().gelu_mul(pool(), gate.data(), uv.data() + n, R, n, stride, gate.data());
      ASSERT_LE(GeluError(backend(), gv, rows, gate, ref), 1.0);  // rows: up packed
    }
  }
}

}  // namespace g4::testing
