// MatMul (ops/matmul.h) against ref::MatMul on every backend (op_backend.h) on random inputs:
// every weight dtype, odd K / N / T (SIMD tails, row tails of the CPU's 4-row and 2-row tiles,
// token tails of its 4-token tiles; the device's GEMV and GEMM paths), misaligned x and w,
// model-sized rows.
// Tolerance: |y - ref| <= 1e-5 * sum_k |x_k w_k| on the CPU. The ref accumulates in f64 (exact
// to ~1e-16); the kernel accumulates in f32 lanes, each lane summing ~K/Lanes products, then a
// lane sum and a scalar tail, so its rounding error is at most ~(K/Lanes + Lanes + 4) * 2^-24 *
// sum|x w|, i.e. <= 5e-6 of sum|x w| at K = 1000 on 8- or 16-lane targets and ~1e-7 typically.
// Any real bug (a dropped tail element, a wrong row, a mis-widened weight) is orders of
// magnitude larger, and MatMulComparator checks that a 3e-5 error is flagged. CUDA: 3e-5 (x as
// hi + lo parts on tensor cores, f32 accumulation in another order; cuda/matmul_test.cc covers
// every tile shape).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kernels/op_backend.h"
#include "kernels/ref/kernels.h"
#include "kernels/test_util.h"

namespace g4::testing {

inline constexpr double kMatMulCpuTol = 1e-5;

struct MatMulResult {
  std::vector<float> y, ref;
  std::vector<double> scale;
};

inline MatMulResult RunMatMul(MatMulFn matmul, ThreadPool& pool, DType dtype, int64_t N,
                             int64_t K, int64_t T, bool misalign, uint32_t seed) {
  const StoredTensor w(RandomFloats(N * K, seed), dtype, {N, K}, misalign);
  const FloatBuffer x(RandomFloats(T * K, seed + 1), misalign);
  FloatBuffer y(T * N, misalign);
  std::vector<float> ref(static_cast<size_t>(T * N));
  // Poison the output: the kernel must write every element.
  for (int64_t i = 0; i < T * N; ++i) y.data()[i] = NAN;
  matmul(pool, w.view(), x.data(), T, y.data());
  ref::MatMul(pool, w.view(), x.data(), T, ref.data());
  return {y.ToVector(T * N), ref, MatMulAbsScale(w.view(), x.data(), T)};
}

class MatMulTest : public OpBackendTest {
 protected:
  double tol() const { return backend().device ? 3e-5 : kMatMulCpuTol; }
};

TEST_P(MatMulTest, MatchesRefOnOddShapes) {
  uint32_t seed = 1;
  for (DType dtype : kFloatDTypes) {
    for (int64_t K : {1, 7, 31, 64, 257, 1000}) {
      for (int64_t N : {1, 3, 6, 17, 67}) {
        for (int64_t T : {1, 2, 3, 4, 5, 8, 17}) {
          for (bool misalign : {false, true}) {
            SCOPED_TRACE(std::string(DTypeName(dtype)) + " K=" + std::to_string(K) +
                         " N=" + std::to_string(N) + " T=" + std::to_string(T) +
                         " misalign=" + std::to_string(misalign));
            const MatMulResult r =
                RunMatMul(ops().matmul, pool(), dtype, N, K, T, misalign, seed++);
            WeightDied();  // the next w may reuse its address
            ASSERT_LE(MaxErrorOverScale(r.y, r.ref, r.scale), tol());
          }
        }
      }
    }
  }
}

// Model-sized rows (E2B hidden 1536, MLP 6144) at decode and a short prefill: long K exercises
// many FMAs per accumulator, and N spans several 4-row tiles per thread.
TEST_P(MatMulTest, MatchesRefAtModelWidths) {
  for (DType dtype : kFloatDTypes) {
    for (auto [N, K] : {std::pair<int64_t, int64_t>{259, 1536}, {67, 6144}}) {
      for (int64_t T : {1, 8}) {
        SCOPED_TRACE(std::string(DTypeName(dtype)) + " N=" + std::to_string(N) +
                     " K=" + std::to_string(K) + " T=" + std::to_string(T));
        const MatMulResult r =
            RunMatMul(ops().matmul, pool(), dtype, N, K, T, /*misalign=*/true, 77);
        WeightDied();
        // K = 6144 allows a little more f32 rounding: 384 FMAs per lane on 16-lane targets.
        ASSERT_LE(MaxErrorOverScale(r.y, r.ref, r.scale), 2 * tol());
      }
    }
  }
}

}  // namespace g4::testing
