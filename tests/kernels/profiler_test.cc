// OpProfiler attached to a Backend (ops/profiler.h, ops/backend.h): every op call is counted in
// its category, matvecs by weight storage, the LM head recognised by its row count, nothing is
// recorded while the profiler is disabled or detached, and the op results are unchanged.
// Also the machine probes of ops/probe.h return plausible figures.
#include <gtest/gtest.h>

#include <vector>

#include "ops/backend.h"
#include "ops/probe.h"
#include "ops/quantize.h"
#include "ops/quantize_gguf.h"

namespace g4 {
namespace {

TEST(OpProfiler, CountsEveryOpByCategory) {
  Backend be(BackendKind::kCpu, 2);
  OpProfiler prof;
  prof.set_lm_head_rows(64);
  be.SetProfiler(&prof);
  const int64_t K = 32;
  std::vector<float> w32(static_cast<size_t>(64 * K), 0.5f), x(static_cast<size_t>(K), 1.0f),
      y(64), y_plain(64);
  const TensorView head(w32.data(), DType::kF32, {64, K});
  const TensorView small(w32.data(), DType::kF32, {16, K});
  be.MatMul(head, x.data(), 1, y.data());
  be.MatMul(small, x.data(), 1, y.data());
  be.MatMul(small, x.data(), 1, y.data());
  auto q = QuantizeWeight(be.pool(), small, QuantKind::kInt4Group, 32, DType::kBF16);
  ASSERT_TRUE(q.ok());
  be.MatMul(q->view, x.data(), 1, y.data());
  be.RmsNorm(x.data(), TensorView{}, 1, K, 1e-6f, y.data());
  be.Add(x.data(), x.data(), K, y.data());
  be.Scale(y.data(), K, 2.0f);
  EXPECT_EQ(prof.calls(OpProfiler::kLmHead), 1);
  EXPECT_EQ(prof.lm_head_storage(), "f32");
  EXPECT_EQ(prof.calls(OpProfiler::kMatVecF32), 2);
  EXPECT_EQ(prof.calls(OpProfiler::kMatVecInt4), 1);
  EXPECT_EQ(prof.calls(OpProfiler::kNorm), 1);
  EXPECT_EQ(prof.calls(OpProfiler::kElementwise), 2);
  EXPECT_EQ(prof.calls(OpProfiler::kAttention), 0);
  EXPECT_GT(prof.total_seconds(), 0.0);
  EXPECT_EQ(prof.ops(), 7);

  // A GroupedMatMul is timed weight by weight, in their categories, and is one op.
  std::vector<float> y2(16);
  MatMulGroup g;
  g.w[0] = &small, g.y[0] = y.data();
  g.w[1] = &q->view, g.y[1] = y2.data();
  g.count = 2;
  be.GroupedMatMul(g, x.data(), 1);
  EXPECT_EQ(prof.calls(OpProfiler::kMatVecF32), 3);
  EXPECT_EQ(prof.calls(OpProfiler::kMatVecInt4), 2);
  EXPECT_EQ(prof.ops(), 8);

  // Disabled or detached: nothing more is recorded, and results are the same.
  prof.set_enabled(false);
  be.MatMul(head, x.data(), 1, y.data());
  be.SetProfiler(nullptr);
  be.MatMul(head, x.data(), 1, y_plain.data());
  EXPECT_EQ(prof.calls(OpProfiler::kLmHead), 1);
  EXPECT_EQ(y, y_plain);
  prof.Reset();
  EXPECT_EQ(prof.calls(OpProfiler::kMatVecF32), 0);
  EXPECT_EQ(prof.ops(), 0);
  EXPECT_EQ(prof.total_seconds(), 0.0);
}

// GGUF block weights have their own matvec category; a GGUF LM head reports its kind.
TEST(OpProfiler, CountsGgufMatVecs) {
  Backend be(BackendKind::kCpu, 2);
  OpProfiler prof;
  prof.set_lm_head_rows(64);
  be.SetProfiler(&prof);
  const int64_t K = 256;
  std::vector<float> w(static_cast<size_t>(64 * K), 0.25f), x(static_cast<size_t>(K), 1.0f), y(64);
  std::vector<uint8_t> q4(static_cast<size_t>(16 * K / 32 * 18)), q6(static_cast<size_t>(64 * K / 256 * 210));
  for (int64_t n = 0; n < 16; ++n) {
    ASSERT_TRUE(QuantizeGgufRow(QuantKind::kQ4_0, w.data() + n * K, K, q4.data() + n * (K / 32 * 18)).ok());
  }
  for (int64_t n = 0; n < 64; ++n) {
    ASSERT_TRUE(QuantizeGgufRow(QuantKind::kQ6_K, w.data() + n * K, K, q6.data() + n * 210).ok());
  }
  const TensorView small(q4.data(), DType::kU8, {16, K}, QuantInfo{QuantKind::kQ4_0, nullptr, DType::kF16, 32, K / 32 * 18});
  const TensorView head(q6.data(), DType::kU8, {64, K}, QuantInfo{QuantKind::kQ6_K, nullptr, DType::kF16, 256, 210});
  be.MatMul(small, x.data(), 1, y.data());
  EXPECT_EQ(y[3], 0.25f * K);  // 0.25 = -2 * (0.25 / -2): exact in Q4_0
  be.MatMul(head, x.data(), 1, y.data());
  EXPECT_EQ(prof.calls(OpProfiler::kMatVecGguf), 1);
  EXPECT_EQ(prof.calls(OpProfiler::kLmHead), 1);
  EXPECT_EQ(prof.lm_head_storage(), "q6_k");
  EXPECT_STREQ(OpProfiler::CategoryName(OpProfiler::kMatVecGguf), "matvec gguf");
}

TEST(MachineProbes, ReturnPlausibleFigures) {
  Backend be(BackendKind::kCpu, 2);
  const double bw = MeasureReadBandwidth(be, size_t{16} << 20, 2);
  EXPECT_GT(bw, 1e8);   // > 0.1 GB/s
  EXPECT_LT(bw, 1e13);  // < 10 TB/s
  const double fma = MeasureFmaPeak(be, 0.01);
  EXPECT_GT(fma, 1e8);
  EXPECT_LT(fma, 1e14);
  EXPECT_GT(MeasureFmaPeakOneThread(0.01), 1e8);
}

}  // namespace
}  // namespace g4
