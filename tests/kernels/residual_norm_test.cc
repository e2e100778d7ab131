// The ResidualNorm cases (residual_norm_test.h) on the CPU kernels, every Highway target this
// machine runs, pools of 1 and 3 threads; the ref against the formula in f64, and the CPU
// tolerance (1e-5) catching an error just above it. With a projection in front (proj): the ref
// op is ref::MatMul then the norm, the CPU table's is the CPU MatMul then the CPU kernel.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/kernels.h"
#include "kernels/residual_norm_test.h"
#include "kernels/ref/kernels.h"
#include "kernels/test_util.h"
#include "ops/backend.h"

namespace g4 {
namespace testing {

INSTANTIATE_TEST_SUITE_P(Cpu, ResidualNormTest, ::testing::ValuesIn(CpuOpBackends()),
                         OpBackendName);

}  // namespace testing

namespace {

using testing::FloatBuffer;
using testing::MaxRowError;
using testing::RandomFloats;
using testing::ResidualNormInputs;
using testing::ResidualNormResult;
using testing::RunResidualNorm;
using testing::StoredTensor;

constexpr double kTol = 1e-5;

// The ref against the formula in f64, element by element.
TEST(ResidualNormRef, IsTheFormula) {
  ThreadPool pool(1);
  const int64_t R = 3, D = 45;
  const ResidualNormInputs in =
      testing::MakeResidualNormInputs(DType::kBF16, DType::kF32, R, D, false, 7);
  const float scale = 0.8f;
  const ResidualNormResult r =
      RunResidualNorm(ref::ResidualNorm, pool, in, R, D, scale, true, false);
  for (int64_t row = 0; row < R; ++row) {
    double ss = 0.0, ss_h = 0.0;
    for (int64_t d = 0; d < D; ++d) ss += std::pow(in.x[row * D + d], 2);
    const double inv = 1.0 / std::sqrt(ss / D + 1e-6);
    std::vector<double> h(static_cast<size_t>(D));
    for (int64_t d = 0; d < D; ++d) {
      h[d] = (in.h[row * D + d] + in.x[row * D + d] * inv * in.w->view().at(d)) * scale;
      ss_h += h[d] * h[d];
      EXPECT_NEAR(r.h[row * D + d], h[d], 1e-6 * (std::fabs(h[d]) + 1)) << row << "," << d;
    }
    const double inv_h = 1.0 / std::sqrt(ss_h / D + 1e-6);
    for (int64_t d = 0; d < D; ++d) {
      const double want = h[d] * inv_h * in.next_w->view().at(d);
      EXPECT_NEAR(r.out[row * D + d], want, 1e-6 * (std::fabs(want) + 1)) << row << "," << d;
    }
  }
}

TEST(ResidualNormComparator, CatchesSmallErrors) {
  ThreadPool pool(1);
  const int64_t R = 2, D = 257;
  const ResidualNormInputs in =
      testing::MakeResidualNormInputs(DType::kF16, DType::kBF16, R, D, false, 99);
  ResidualNormResult c = RunResidualNorm(cpu::ResidualNorm, pool, in, R, D, 1.0f, true, false);
  const ResidualNormResult r =
      RunResidualNorm(ref::ResidualNorm, pool, in, R, D, 1.0f, true, false);
  EXPECT_LE(MaxRowError(c.out, r.out, D), kTol / 4);
  double row_max = 0.0;  // row 1 holds element 300
  for (int64_t d = D; d < 2 * D; ++d) row_max = std::max(row_max, std::fabs(double{r.out[d]}));
  c.out[300] += static_cast<float>(2 * kTol * row_max);
  EXPECT_GT(MaxRowError(c.out, r.out, D), kTol);
}

// proj: x = proj_in @ proj^T is written first, then the norm runs on it; the ref op against
// ref::MatMul then ref::ResidualNorm (bit for bit), the CPU table's op against the ref op.
TEST(ResidualNormProjection, IsMatMulThenTheNorm) {
  ThreadPool pool(3);
  const ResidualNormFn cpu_op = GetOpTable(BackendKind::kCpu).residual_norm;
  ASSERT_NE(cpu_op, nullptr);
  const int64_t R = 3, D = 37, K = 29;
  const StoredTensor proj(RandomFloats(D * K, 5), DType::kBF16, {D, K}, false);
  const StoredTensor w(RandomFloats(D, 6, -0.5f, 2.0f), DType::kF32, {D}, false);
  const std::vector<float> in = RandomFloats(R * K, 7), h0 = RandomFloats(R * D, 8);
  struct Run {
    std::vector<float> x, h, out;
  };
  auto run = [&](ResidualNormFn fn, bool with_proj, const std::vector<float>& x0) {
    Run r{x0, h0, std::vector<float>(h0.size(), -7.0f)};
    ResidualNormArgs a;
    a.x = r.x.data();
    a.w = &w.view();
    a.h = r.h.data();
    a.scale = 0.5f;
    a.next_w = &w.view();
    a.out = r.out.data();
    a.R = R, a.D = D, a.eps = 1e-6f;
    if (with_proj) a.proj = &proj.view(), a.proj_in = in.data();
    fn(pool, a);
    return r;
  };
  const std::vector<float> unset(static_cast<size_t>(R * D), -7.0f);
  std::vector<float> y(unset.size());
  ref::MatMul(pool, proj.view(), in.data(), R, y.data());
  const Run parts = run(ref::ResidualNorm, false, y);
  const Run ref_op = run(ref::ResidualNorm, true, unset);
  EXPECT_EQ(ref_op.x, y);
  EXPECT_EQ(ref_op.h, parts.h);
  EXPECT_EQ(ref_op.out, parts.out);
  const Run cpu = run(cpu_op, true, unset);
  EXPECT_LE(MaxRowError(cpu.x, ref_op.x, D), 1e-5);
  EXPECT_LE(MaxRowError(cpu.h, ref_op.h, D, h0, 0.5f), 1e-4);
  EXPECT_LE(MaxRowError(cpu.out, ref_op.out, D), 1e-4);
}

}  // namespace
}  // namespace g4
