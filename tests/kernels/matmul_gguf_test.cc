// g4::cpu::MatMul on GGUF block weights (matmul_gguf.cc) against g4::ref::MatMul, which
// dequantizes block by block with core/gguf_blocks.h: every kind, every compiled SIMD target,
// random blocks (gguf_test_util.h), odd N (tails of the 4-row tiles), K of 1 .. 48 blocks,
// T = 1 (fused decode) and T = 3, 7 (dequantized panels), misaligned weights and x, pools of 1
// and 3 threads, and the E2B widths.
// Tolerance as for float weights (matmul_test.cc): |y - ref| <= 1e-5 * sum_k |x_k w_k|; the
// kernels' dequantized values differ from the reference's by at most an f32 rounding (fused
// multiply-adds), so the difference is f32 accumulation.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "core/gguf_blocks.h"
#include "gtest/gtest.h"
#include "kernels/cpu/kernels.h"
#include "kernels/gguf_test_util.h"
#include "kernels/ref/kernels.h"
#include "kernels/test_util.h"
#include "ops/quantize.h"
#include "ops/quantize_gguf.h"

namespace g4 {
namespace {

using testing::FloatBuffer;
using testing::GgufTensor;
using testing::RandomFloats;

constexpr double kTol = 1e-5;

// max |cpu - ref| / sum_k |x_k w_k| over every output; NaN (an unwritten output) propagates.
double RunAndCompare(ThreadPool& pool, const TensorView& w, int64_t T, bool misalign, uint32_t seed) {
  const int64_t N = w.dim(0), K = w.dim(1);
  const FloatBuffer x(RandomFloats(T * K, seed), misalign);
  FloatBuffer y(T * N, misalign);
  for (int64_t i = 0; i < T * N; ++i) y.data()[i] = NAN;
  std::vector<float> ref(static_cast<size_t>(T * N));
  cpu::MatMul(pool, w, x.data(), T, y.data());
  ref::MatMul(pool, w, x.data(), T, ref.data());
  std::vector<float> row(static_cast<size_t>(K));
  double worst = 0.0;
  for (int64_t n = 0; n < N; ++n) {
    DequantizeGgufRow(w.quant.kind, static_cast<const uint8_t*>(w.data) + n * w.quant.row_bytes, K, row.data());
    for (int64_t t = 0; t < T; ++t) {
      double scale = 0.0;
      for (int64_t k = 0; k < K; ++k) scale += std::fabs(double{x.data()[t * K + k]} * row[k]);
      const double err = std::fabs(static_cast<double>(y.data()[t * N + n]) - ref[t * N + n]);
      const double e = scale > 0 ? err / scale : (err > 0 ? INFINITY : 0.0);
      if (!(e <= worst)) worst = e;
    }
  }
  return worst;
}

class GgufMatMulTest : public ::testing::TestWithParam<std::tuple<QuantKind, int, std::string>> {};

TEST_P(GgufMatMulTest, MatchesRefOnOddShapes) {
  const auto [kind, threads, target] = GetParam();
  const testing::ScopedTarget scoped_target(target);
  ASSERT_TRUE(scoped_target.ok()) << target;
  ThreadPool pool(threads);
  const int64_t elems = GgufBlockFormat(kind).elems;
  uint32_t seed = 1;
  double worst = 0.0;
  for (int64_t blocks : elems == 32 ? std::vector<int64_t>{1, 3, 9, 48} : std::vector<int64_t>{1, 2, 6}) {
    const int64_t K = blocks * elems;
    for (int64_t N : {1, 3, 5, 17}) {
      for (int64_t T : {1, 3, 7}) {
        for (bool misalign : {false, true}) {
          SCOPED_TRACE("K=" + std::to_string(K) + " N=" + std::to_string(N) + " T=" + std::to_string(T) +
                       " misalign=" + std::to_string(misalign));
          const GgufTensor w(kind, N, K, misalign, seed++);
          const double e = RunAndCompare(pool, w.view(), T, misalign, seed++);
          ASSERT_LE(e, kTol);
          worst = std::max(worst, e);
        }
      }
    }
  }
  std::printf("%s %s: max |cpu - ref| / sum|x w| = %.3g\n", QuantKindName(kind), target.c_str(), worst);
}

// E2B widths: hidden 1536 (attention, MLP up, the head over [V, 1536]), 6144 (MLP down); N spans
// several 4-row tiles and panels per thread (3 threads).
class GgufMatMulWidthsTest : public ::testing::TestWithParam<std::tuple<QuantKind, std::string>> {};

TEST_P(GgufMatMulWidthsTest, MatchesRefAtModelWidths) {
  const auto [kind, target] = GetParam();
  const testing::ScopedTarget scoped_target(target);
  ASSERT_TRUE(scoped_target.ok()) << target;
  ThreadPool pool(3);
  for (auto [N, K] : {std::pair<int64_t, int64_t>{259, 1536}, {67, 6144}}) {
    for (int64_t T : {1, 8}) {
      SCOPED_TRACE("N=" + std::to_string(N) + " K=" + std::to_string(K) + " T=" + std::to_string(T));
      const GgufTensor w(kind, N, K, /*misalign=*/true, 77);
      ASSERT_LE(RunAndCompare(pool, w.view(), T, /*misalign=*/true, 78), 2 * kTol);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(KindsTargets, GgufMatMulWidthsTest,
                         ::testing::Combine(::testing::ValuesIn(testing::kGgufKinds),
                                            ::testing::ValuesIn(testing::Targets())),
                         testing::ParamNames());

INSTANTIATE_TEST_SUITE_P(KindsPoolsTargets, GgufMatMulTest,
                         ::testing::Combine(::testing::ValuesIn(testing::kGgufKinds),
                                            ::testing::Values(1, 3),
                                            ::testing::ValuesIn(testing::Targets())),
                         testing::ParamNames());

// Block order and nibble order on every target, decode and prefill: a Q4_0 row of 3 blocks with
// d = 1, 2, 4 and q = (j + b) mod 16 - 8; with x = e_k, y = d * q exactly.
TEST(GgufMatMulExact, Q4_0UnitVectors) {
  const int64_t K = 96;
  std::vector<uint8_t> row(3 * 18);
  for (int b = 0; b < 3; ++b) {
    const uint16_t d = F32ToF16(static_cast<float>(1 << b));
    std::memcpy(row.data() + 18 * b, &d, 2);
    for (int j = 0; j < 16; ++j) {
      row[18 * b + 2 + j] = static_cast<uint8_t>(((j + b) % 16) | (((j + 16 + b) % 16) << 4));
    }
  }
  const TensorView w(row.data(), DType::kU8, {1, K}, QuantInfo{QuantKind::kQ4_0, nullptr, DType::kF16, 32, 54});
  for (const std::string& target : testing::Targets()) {
    const testing::ScopedTarget scoped(target);
    ThreadPool pool(1);
    for (int64_t k = 0; k < K; ++k) {
      for (int64_t T : {1, 3}) {
        std::vector<float> x(static_cast<size_t>(T * K), 0.0f), y(static_cast<size_t>(T));
        for (int64_t t = 0; t < T; ++t) x[t * K + k] = 1.0f;
        cpu::MatMul(pool, w, x.data(), T, y.data());
        const int64_t b = k / 32, j = k % 32;
        const float want = static_cast<float>(1 << b) * static_cast<float>((j + b) % 16 - 8);
        for (int64_t t = 0; t < T; ++t) EXPECT_EQ(y[t], want) << target << " k=" << k << " T=" << T;
      }
    }
  }
}

// The int8 head copy of a GGUF block table (HeadMode::kAuto with a Q6_K tied embedding): each
// element is within half a step of the block-decoded float (plus the scale's rounding), and
// the f32 per-row scale is absmax / 127 of the decoded row.
TEST(GgufQuantize, Int8CopyOfBlocksTracksDecodedRows) {
  ThreadPool pool(3);
  uint32_t seed = 11;
  for (QuantKind kind : testing::kGgufKinds) {
    const int64_t elems = GgufBlockFormat(kind).elems;
    const int64_t N = 37, K = 3 * elems;
    const testing::GgufTensor w(kind, N, K, /*misalign=*/true, seed++);
    auto q = QuantizeWeight(pool, w.view(), QuantKind::kInt8Group, K, DType::kF32);
    ASSERT_TRUE(q.ok()) << QuantKindName(kind) << ": " << q.status().ToString();
    std::vector<float> row(static_cast<size_t>(K));
    for (int64_t n = 0; n < N; ++n) {
      DequantizeGgufRow(kind, static_cast<const uint8_t*>(w.view().data) + n * w.view().quant.row_bytes,
                        K, row.data());
      float absmax = 0.0f;
      for (float v : row) absmax = std::max(absmax, std::fabs(v));
      const float scale = static_cast<const float*>(q->view.quant.scales)[n];
      ASSERT_FLOAT_EQ(scale, absmax / 127.0f) << QuantKindName(kind) << " n=" << n;
      for (int64_t k = 0; k < K; ++k) {
        ASSERT_LE(std::fabs(q->view.at(n * K + k) - row[static_cast<size_t>(k)]), 0.501f * scale)
            << QuantKindName(kind) << " n=" << n << " k=" << k;
      }
    }
  }
}

// The Q8_0 head copy (HeadMode::kQ8_0: int8 activations where the stored head is not packed):
// every row is exactly QuantizeGgufRow(Q8_0) of the decoded row, for float and block sources;
// a kind without a quantizer, or a K the block does not divide, is refused with its name.
TEST(GgufQuantize, Q8_0CopyIsTheDecodedRowsQuantized) {
  ThreadPool pool(3);
  uint32_t seed = 31;
  for (QuantKind kind : testing::kGgufKinds) {
    const int64_t elems = GgufBlockFormat(kind).elems;
    const int64_t N = 21, K = 2 * std::max<int64_t>(elems, 32);
    const testing::GgufTensor w(kind, N, K, /*misalign=*/true, seed++);
    auto q = QuantizeWeight(pool, w.view(), QuantKind::kQ8_0, 0, DType::kF32);
    ASSERT_TRUE(q.ok()) << QuantKindName(kind) << ": " << q.status().ToString();
    ASSERT_EQ(q->view.quant.kind, QuantKind::kQ8_0);
    ASSERT_EQ(q->view.quant.row_bytes, K / 32 * 34);
    std::vector<float> row(static_cast<size_t>(K));
    std::vector<uint8_t> want(static_cast<size_t>(K / 32 * 34));
    for (int64_t n = 0; n < N; ++n) {
      DequantizeGgufRow(kind,
                        static_cast<const uint8_t*>(w.view().data) + n * w.view().quant.row_bytes,
                        K, row.data());
      ASSERT_TRUE(QuantizeGgufRow(QuantKind::kQ8_0, row.data(), K, want.data()).ok());
      ASSERT_EQ(std::memcmp(static_cast<const uint8_t*>(q->view.data) + n * q->view.quant.row_bytes,
                            want.data(), want.size()),
                0)
          << QuantKindName(kind) << " n=" << n;
    }
  }
  const std::vector<float> f = testing::RandomFloats(3 * 64, 5);
  const TensorView floats(f.data(), DType::kF32, {3, 64});
  auto q = QuantizeWeight(pool, floats, QuantKind::kQ8_0, 0, DType::kF32);
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  std::vector<uint8_t> want(2 * 34);
  ASSERT_TRUE(QuantizeGgufRow(QuantKind::kQ8_0, f.data() + 64, 64, want.data()).ok());
  EXPECT_EQ(std::memcmp(static_cast<const uint8_t*>(q->view.data) + 68, want.data(), 68), 0);
  auto bad = QuantizeWeight(pool, TensorView(f.data(), DType::kF32, {4, 48}), QuantKind::kQ8_0, 0,
                            DType::kF32);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("q8_0"), std::string::npos) << bad.status().message();
  auto q5 = QuantizeWeight(pool, floats, QuantKind::kQ5_0, 0, DType::kF32);
  ASSERT_FALSE(q5.ok());
  EXPECT_NE(q5.status().message().find("q5_0"), std::string::npos) << q5.status().message();
}

}  // namespace
}  // namespace g4
