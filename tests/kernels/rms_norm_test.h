// RmsNorm (ops/rms_norm.h) against ref::RmsNorm on every backend (op_backend.h): no weight and
// F32/BF16/F16 weights (plain w, never 1 + w), odd widths, row counts, misaligned rows, in-place
// use.
// Tolerance, CPU: |y - ref| <= 1e-5 * |x * inv_rms * w| per element (that is ~|ref|). The kernel
// sums squares in f32 lanes (relative error <= ~(D/Lanes + Lanes) * 2^-24, <= 3e-6 at D = 1536
// on 16 lanes, ~1e-7 typically) and rounds x * inv * w twice more (~2e-7); the ref is f64.
// CUDA: one partial per thread, then a tree: relative error <= ~(D / 256 + 256) * 2^-24 ~ 2e-5
// at worst, ~1e-6 typically; tolerance 3e-5 of |ref| (+1e-6 absolute near 0).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels/op_backend.h"
#include "kernels/ref/kernels.h"
#include "kernels/test_util.h"

namespace g4::testing {

inline constexpr double kRmsNormCpuTol = 1e-5;

struct RmsNormRun {
  std::vector<float> y, ref;
};

// wtype nullopt: no weight.
inline RmsNormRun RunRmsNorm(const OpTable& ops, ThreadPool& pool, std::optional<DType> wtype,
                             int64_t R, int64_t D, bool misalign, bool in_place, uint32_t seed) {
  const std::vector<float> xv = RandomFloats(R * D, seed, -3.0f, 3.0f);
  // Weights around 1 with a spread, so 1 + w and w give clearly different results.
  const StoredTensor w(RandomFloats(D, seed + 1, -0.5f, 2.0f), wtype.value_or(DType::kF32), {D},
                       misalign);
  const TensorView wv = wtype ? w.view() : TensorView{};
  const float eps = 1e-6f;
  FloatBuffer x(xv, misalign);
  std::vector<float> ref(static_cast<size_t>(R * D));
  ref::RmsNorm(pool, x.data(), wv, R, D, eps, ref.data());
  if (in_place) {
    ops.rms_norm(pool, x.data(), wv, R, D, eps, x.data());
    return {x.ToVector(R * D), ref};
  }
  FloatBuffer y(R * D, misalign);
  ops.rms_norm(pool, x.data(), wv, R, D, eps, y.data());
  return {y.ToVector(R * D), ref};
}

class RmsNormTest : public OpBackendTest {};

TEST_P(RmsNormTest, MatchesRef) {
  const double tol = backend().device ? 3e-5 : kRmsNormCpuTol;
  const double floor = backend().device ? 1e-6 / 3e-5 : 0.0;
  uint32_t seed = 10;
  for (const std::optional<DType>& wtype : kNormWeights) {
    for (int64_t D : {1, 7, 16, 31, 256, 1000, 1536, 2049}) {
      for (int64_t R : {1, 3, 7, 40}) {
        for (bool misalign : {false, true}) {
          for (bool in_place : {false, true}) {
            SCOPED_TRACE("w=" + ParamPart(wtype) + " D=" + std::to_string(D) +
                         " R=" + std::to_string(R) + " misalign=" + std::to_string(misalign) +
                         " in_place=" + std::to_string(in_place));
            const RmsNormRun c =
                RunRmsNorm(ops(), pool(), wtype, R, D, misalign, in_place, seed++);
            WeightDied();  // the next w may reuse its address
            ASSERT_LE(MaxScaledError(c.y, c.ref, floor), tol);
          }
        }
      }
    }
  }
}

}  // namespace g4::testing
