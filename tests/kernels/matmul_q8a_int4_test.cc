// MatMulQ8a on W4A16's int4 groups of 32 (kernels/cpu/matmul_q8a_int4.h): packed at load as the
// Q4_0 panels of the same weights where every scale is an f16. Checked: each group written as a
// Q4_0 block dequantizes to the same weights; ref::MatMulQ8a on the int4 rows equals it on those
// Q4_0 rows bit for bit; the CPU kernels (the best target, AVX2 and the last one, 1 and 3 threads,
// T = 1 and past the tiles of 4 rows of x, odd N and group counts) against the ref, and bit for
// bit against the same kernels on the Q4_0 weight; a scale no f16 holds, or groups of another
// size, leave the weight to MatMul.

#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "core/gguf_blocks.h"
#include "core/q8_blocks.h"
#include "gtest/gtest.h"
#include "kernels/cpu/kernels.h"
#include "kernels/ref/kernels.h"
#include "kernels/test_util.h"
#include "ops/matmul_q8a.h"
#include "ops/quantize.h"

namespace g4 {
namespace {

using testing::RandomFloats;

// A random [N, K] weight quantized as W4A16 (int4, groups of `group`), values in +-range.
QuantizedWeight Int4Weight(int64_t N, int64_t K, DType scale_dtype, uint32_t seed,
                           float range = 1.0f, int64_t group = 32) {
  ThreadPool pool(1);
  const std::vector<float> f = RandomFloats(N * K, seed, -range, range);
  auto q = QuantizeWeight(pool, TensorView(f.data(), DType::kF32, {N, K}), QuantKind::kInt4Group,
                          group, scale_dtype);
  EXPECT_TRUE(q.ok()) << q.status().ToString();
  return q.ok() ? *q : QuantizedWeight{};
}

// w's groups as Q4_0 blocks, and the [N, K] view of them; `exact` is false where a scale is not
// an f16.
struct Q4_0Copy {
  std::vector<uint8_t> bytes;
  TensorView view;
  bool exact = true;
};
Q4_0Copy AsQ4_0(const TensorView& w) {
  const int64_t N = w.dim(0), K = w.dim(1), groups = K / 32;
  const int64_t block = GgufBlockFormat(QuantKind::kQ4_0).bytes;
  Q4_0Copy c;
  c.bytes.resize(static_cast<size_t>(N * groups * block));
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t g = 0; g < groups; ++g) {
      c.exact &= Int4GroupToQ4_0(w, n, g, c.bytes.data() + (n * groups + g) * block);
    }
  }
  c.view = TensorView(c.bytes.data(), DType::kU8, {N, K},
                      QuantInfo{QuantKind::kQ4_0, nullptr, DType::kF16, 32, groups * block});
  return c;
}

// sum_k |x_k w_k| of row n: the scale of f32 summation error.
double AbsDot(const TensorView& w, int64_t n, const float* x) {
  double s = 0.0;
  for (int64_t k = 0; k < w.dim(1); ++k) s += std::fabs(double{x[k]} * w.at(n * w.dim(1) + k));
  return s;
}

TEST(MatMulQ8aInt4, GroupsAsQ4_0BlocksAreTheSameWeights) {
  for (DType scale_dtype : {DType::kBF16, DType::kF16}) {
    const int64_t N = 5, K = 96;
    const QuantizedWeight w = Int4Weight(N, K, scale_dtype, 3);
    const Q4_0Copy q4 = AsQ4_0(w.view);
    ASSERT_TRUE(q4.exact);
    std::vector<float> row(static_cast<size_t>(K));
    for (int64_t n = 0; n < N; ++n) {
      DequantizeGgufRow(QuantKind::kQ4_0, q4.bytes.data() + n * q4.view.quant.row_bytes, K,
                        row.data());
      for (int64_t k = 0; k < K; ++k) {
        ASSERT_EQ(row[static_cast<size_t>(k)], w.view.at(n * K + k))
            << DTypeName(scale_dtype) << " row " << n << " column " << k;
      }
    }
  }
}

class MatMulQ8aInt4Test : public ::testing::TestWithParam<int> {};

TEST_P(MatMulQ8aInt4Test, PanelsMatchRefAndTheQ4_0Weight) {
  ThreadPool pool(GetParam());
  uint32_t seed = 71;
  const std::vector<std::string> targets = testing::Targets();
  for (int64_t T : {1, 2, 5, 9}) {
    for (auto [N, groups] : std::vector<std::pair<int64_t, int64_t>>{
             {1, 1}, {17, 3}, {33, 48}, {70, 7}, {640, 64}}) {
      const int64_t K = 32 * groups;
      SCOPED_TRACE("T=" + std::to_string(T) + " K=" + std::to_string(K) +
                   " N=" + std::to_string(N));
      const QuantizedWeight w = Int4Weight(N, K, DType::kBF16, seed++);
      const PackedWeight panels = cpu::PackQ8aWeight(pool, w.view);
      if (!panels.panels) GTEST_SKIP() << "no panel kernel on this CPU";
      TensorView packed = w.view;
      SetPanels(panels, &packed);
      ASSERT_TRUE(UsesQ8Activations(packed, T));
      EXPECT_FALSE(UsesQ8Activations(w.view, T));  // not packed: MatMul
      Q4_0Copy q4 = AsQ4_0(w.view);
      ASSERT_TRUE(q4.exact);
      const PackedWeight q4_panels = cpu::PackQ8aWeight(pool, q4.view);
      ASSERT_TRUE(q4_panels.panels);
      SetPanels(q4_panels, &q4.view);
      const std::vector<float> x = RandomFloats(T * K, seed++);
      std::vector<float> ref(static_cast<size_t>(T * N)), ref_q4(ref.size());
      ref::MatMulQ8a(pool, packed, x.data(), T, ref.data());
      ref::MatMulQ8a(pool, q4.view, x.data(), T, ref_q4.data());
      ASSERT_EQ(ref, ref_q4);
      for (const std::string& target : {targets.front(), std::string("AVX2"), targets.back()}) {
        const testing::ScopedTarget scoped_target(target);
        if (!scoped_target.ok()) continue;  // AVX2 not compiled in
        SCOPED_TRACE(target);
        std::vector<float> y(ref.size(), NAN), y_q4(ref.size(), NAN);
        cpu::MatMulQ8a(pool, packed, x.data(), T, y.data());
        cpu::MatMulQ8a(pool, q4.view, x.data(), T, y_q4.data());
        // The same panels through the same kernel; below the panel kernels the int4 rows and
        // the Q4_0 rows are summed by different scalar code.
        if (target != targets.back() || targets.size() == 1) {
          EXPECT_EQ(y, y_q4);
        }
        for (int64_t t = 0; t < T; ++t) {
          for (int64_t n = 0; n < N; ++n) {
            const double e = std::fabs(double{y[t * N + n]} - ref[t * N + n]) /
                             AbsDot(w.view, n, x.data() + t * K);
            ASSERT_LE(e, 1e-5) << "row " << t << " column " << n;  // NaN fails too
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Pools, MatMulQ8aInt4Test, ::testing::Values(1, 3));

// Scales of ~1e-7 (bf16) fall among f16's subnormals, which keep fewer bits: such a weight, and
// one with groups of 64, is not packed, and MatMulQ8a is MatMul on it, bit for bit.
TEST(MatMulQ8aInt4, LeftToMatMulWhereQ4_0CannotHoldIt) {
  ThreadPool pool(2);
  const int64_t N = 7, K = 128;
  const QuantizedWeight tiny = Int4Weight(N, K, DType::kBF16, 9, /*range=*/1e-6f);
  EXPECT_FALSE(AsQ4_0(tiny.view).exact);
  const QuantizedWeight g64 = Int4Weight(N, K, DType::kBF16, 9, 1.0f, /*group=*/64);
  for (const TensorView* w : {&tiny.view, &g64.view}) {
    EXPECT_EQ(cpu::PackQ8aWeight(pool, *w).panels, nullptr);
    EXPECT_FALSE(UsesQ8Activations(*w, 1));
    const std::vector<float> x = RandomFloats(3 * K, 10);
    std::vector<float> a(3 * N), b(3 * N);
    cpu::MatMulQ8a(pool, *w, x.data(), 3, a.data());
    cpu::MatMul(pool, *w, x.data(), 3, b.data());
    EXPECT_EQ(a, b);
  }
}

}  // namespace
}  // namespace g4
