// The MatMul cases (matmul_test.h) on the CPU kernels, every Highway target this machine runs,
// pools of 1 and 3 threads; the CPU tolerance catching an error just above it, and weights
// widened rather than reinterpreted.

#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/kernels.h"
#include "kernels/matmul_test.h"
#include "kernels/ref/kernels.h"
#include "kernels/test_util.h"

namespace g4 {
namespace testing {

INSTANTIATE_TEST_SUITE_P(Cpu, MatMulTest, ::testing::ValuesIn(CpuOpBackends()), OpBackendName);

}  // namespace testing

namespace {

using testing::MatMulResult;
using testing::MaxErrorOverScale;
using testing::RunMatMul;

constexpr double kTol = testing::kMatMulCpuTol;

// The tolerance is tight: a result off by 3e-5 of its scale in one element is rejected, while the
// kernel itself stays far below 1e-5.
TEST(MatMulComparator, CatchesSmallErrors) {
  ThreadPool pool(2);
  MatMulResult r = RunMatMul(cpu::MatMul, pool, DType::kBF16, 17, 257, 5, false, 5);
  EXPECT_LE(MaxErrorOverScale(r.y, r.ref, r.scale), kTol / 10);
  r.y[23] += static_cast<float>(3 * kTol * r.scale[23]);
  EXPECT_GT(MaxErrorOverScale(r.y, r.ref, r.scale), kTol);
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
