// The RmsNorm cases (rms_norm_test.h) on the CPU kernels: every Highway target this machine
// runs, pools of 1 and 3 threads; a zero weight, and the CPU tolerance catching an error just
// above it.
#include "kernels/rms_norm_test.h"

#include <cmath>
#include <vector>

#include "kernels/cpu/kernels.h"

namespace g4 {
namespace testing {

INSTANTIATE_TEST_SUITE_P(Cpu, RmsNormTest, ::testing::ValuesIn(CpuOpBackends()), OpBackendName);

}  // namespace testing

namespace {

using testing::RandomFloats;

// Plain w: a zero weight gives zero output (1 + w would pass x through normalized).
TEST(RmsNormExact, ZeroWeightGivesZero) {
  ThreadPool pool(1);
  const int64_t D = 37;
  const std::vector<float> x = RandomFloats(D, 3);
  const std::vector<float> w(static_cast<size_t>(D), 0.0f);
  std::vector<float> y(static_cast<size_t>(D), 1.0f);
  cpu::RmsNorm(pool, x.data(), TensorView{w.data(), DType::kF32, {D}}, 1, D, 1e-6f, y.data());
  for (float v : y) EXPECT_EQ(std::fabs(v), 0.0f);
}

TEST(RmsNormComparator, CatchesSmallErrors) {
  ThreadPool pool(1);
  testing::RmsNormRun c = testing::RunRmsNorm(GetOpTable(BackendKind::kCpu), pool, DType::kBF16,
                                              3, 257, false, false, 99);
  EXPECT_LE(testing::MaxScaledError(c.y, c.ref, 0.0), testing::kRmsNormCpuTol / 4);
  c.y[100] *= 1.0f + static_cast<float>(3 * testing::kRmsNormCpuTol);
  EXPECT_GT(testing::MaxScaledError(c.y, c.ref, 0.0), testing::kRmsNormCpuTol);
}

}  // namespace
}  // namespace g4
