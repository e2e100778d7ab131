// g4::cpu::MatMul against g4::ref::MatMul on random inputs: every weight dtype, odd K / N / T
// (SIMD tails, row tails of the 4-row and 2-row tiles, token tails of the 4-token tiles),
// misaligned x and w, pools of 1 and 3 threads.
// Tolerance: |y - ref| <= 1e-5 * sum_k |x_k w_k|. The ref accumulates in f64 (exact to ~1e-16);
// the kernel accumulates in f32 lanes, each lane summing ~K/Lanes products, then a lane sum and
// a scalar tail, so its rounding error is at most ~(K/Lanes + Lanes + 4) * 2^-24 * sum|x w|,
// i.e. <= 5e-6 of sum|x w| at K = 1000 on 8- or 16-lane targets and ~1e-7 typically. Any real
// bug (a dropped tail element, a wrong row, a mis-widened weight) is orders of magnitude larger,
// and ComparatorCatchesSmallErrors checks that a 3e-5 error is flagged.

#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/kernels.h"
#include "kernels/ref/kernels.h"
#include "kernels/test_util.h"

namespace g4 {
namespace {

using testing::FloatBuffer;
using testing::RandomFloats;
using testing::StoredTensor;

constexpr double kTol = 1e-5;

// sum_k |x[t, k] * w[n, k]| for every (t, n): the scale of the rounding error of y[t, n].
std::vector<double> AbsScale(const TensorView& w, const float* x, int64_t T) {
  const int64_t N = w.dim(0), K = w.dim(1);
  std::vector<double> s(static_cast<size_t>(T * N), 0.0);
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t n = 0; n < N; ++n) {
      double acc = 0.0;
      for (int64_t k = 0; k < K; ++k) {
        acc += std::fabs(static_cast<double>(x[t * K + k]) * w.at(n * K + k));
      }
      s[t * N + n] = acc;
    }
  }
  return s;
}

// max over elements of |y - ref| / scale (scale 0 only when the whole row of products is 0).
double MaxScaledError(const std::vector<float>& y, const std::vector<float>& ref,
                      const std::vector<double>& scale) {
  double worst = 0.0;
  for (size_t i = 0; i < y.size(); ++i) {
    const double err = std::fabs(static_cast<double>(y[i]) - ref[i]);
    const double e = scale[i] > 0 ? err / scale[i] : (err > 0 ? INFINITY : 0.0);
    if (!(e <= worst)) worst = e;  // also propagates NaN
  }
  return worst;
}

struct Result {
  std::vector<float> cpu, ref;
  std::vector<double> scale;
};

Result RunMatMul(ThreadPool& pool, DType dtype, int64_t N, int64_t K, int64_t T, bool misalign,
           uint32_t seed) {
  const StoredTensor w(RandomFloats(N * K, seed), dtype, {N, K}, misalign);
  const FloatBuffer x(RandomFloats(T * K, seed + 1), misalign);
  FloatBuffer y(T * N, misalign);
  std::vector<float> ref(static_cast<size_t>(T * N));
  // Poison the output: the kernel must write every element.
  for (int64_t i = 0; i < T * N; ++i) y.data()[i] = NAN;
  cpu::MatMul(pool, w.view(), x.data(), T, y.data());
  ref::MatMul(pool, w.view(), x.data(), T, ref.data());
  return {y.ToVector(T * N), ref, AbsScale(w.view(), x.data(), T)};
}

class MatMulTest : public ::testing::TestWithParam<std::tuple<DType, int, std::string>> {};

TEST_P(MatMulTest, MatchesRefOnOddShapes) {
  const auto [dtype, threads, target] = GetParam();
  const testing::ScopedTarget scoped_target(target);
  ASSERT_TRUE(scoped_target.ok()) << target;
  ThreadPool pool(threads);
  uint32_t seed = 1;
  for (int64_t K : {1, 7, 31, 64, 257, 1000}) {
    for (int64_t N : {1, 3, 6, 17, 67}) {
      for (int64_t T : {1, 2, 3, 4, 5, 8, 17}) {
        for (bool misalign : {false, true}) {
          SCOPED_TRACE("K=" + std::to_string(K) + " N=" + std::to_string(N) +
                       " T=" + std::to_string(T) + " misalign=" + std::to_string(misalign));
          const Result r = RunMatMul(pool, dtype, N, K, T, misalign, seed++);
          ASSERT_LE(MaxScaledError(r.cpu, r.ref, r.scale), kTol);
        }
      }
    }
  }
}

// Model-sized rows (E2B hidden 1536, MLP 6144) at decode and a short prefill: long K exercises
// many FMAs per accumulator, and N spans several 4-row tiles per thread.
TEST_P(MatMulTest, MatchesRefAtModelWidths) {
  const auto [dtype, threads, target] = GetParam();
  const testing::ScopedTarget scoped_target(target);
  ASSERT_TRUE(scoped_target.ok()) << target;
  ThreadPool pool(threads);
  for (auto [N, K] : {std::pair<int64_t, int64_t>{259, 1536}, {67, 6144}}) {
    for (int64_t T : {1, 8}) {
      SCOPED_TRACE("N=" + std::to_string(N) + " K=" + std::to_string(K) +
                   " T=" + std::to_string(T));
      const Result r = RunMatMul(pool, dtype, N, K, T, /*misalign=*/true, 77);
      // K = 6144 allows a little more f32 rounding: 384 FMAs per lane on 16-lane targets.
      ASSERT_LE(MaxScaledError(r.cpu, r.ref, r.scale), 2 * kTol);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(DTypesPoolsTargets, MatMulTest,
                         ::testing::Combine(::testing::ValuesIn(testing::kFloatDTypes),
                                            ::testing::Values(1, 3),
                                            ::testing::ValuesIn(testing::Targets())),
                         testing::ParamNames());

// The tolerance is tight: a result off by 3e-5 of its scale in one element is rejected, while the
// kernel itself stays far below 1e-5.
TEST(MatMulComparator, CatchesSmallErrors) {
  ThreadPool pool(2);
  Result r = RunMatMul(pool, DType::kBF16, 17, 257, 5, false, 5);
  EXPECT_LE(MaxScaledError(r.cpu, r.ref, r.scale), kTol / 10);
  r.cpu[23] += static_cast<float>(3 * kTol * r.scale[23]);
  EXPECT_GT(MaxScaledError(r.cpu, r.ref, r.scale), kTol);
}

// Weights are widened, not reinterpreted: BF16 1.0 (0x3f80) times x gives x exactly.
TEST(MatMulExact, Bf16OnesSumInputs) {
  ThreadPool pool(1);
  const int64_t N = 2, K = 33;
  std::vector<uint16_t> w(static_cast<size_t>(N * K), 0x3f80);
  TensorView view{w.data(), DType::kBF16, {N, K}};
  std::vector<float> x(static_cast<size_t>(K));
  for (int64_t k = 0; k < K; ++k) x[k] = static_cast<float>(k);
  std::vector<float> y(static_cast<size_t>(N));
  cpu::MatMul(pool, view, x.data(), 1, y.data());
  EXPECT_EQ(y[0], 528.0f);  // 0 + 1 + ... + 32
  EXPECT_EQ(y[1], 528.0f);
}

}  // namespace
}  // namespace g4
