// MatMulQ8a (ops/matmul_q8a.h): the CPU kernels (kernels/cpu/matmul_q8a.cc: vnni512, avx2,
// scalar, one per pinned Highway target) against ref::MatMulQ8a on random Q4_0 / Q5_0 / Q8_0 /
// Q4_K / Q6_K blocks, odd N, block counts that leave tails after the 2- and 4-block steps,
// misaligned weights and x, pools of 1 and 3 threads. The ref itself is checked against the exact
// MatMul: equal where x's quantization is exact, within the 8-bit rounding of x otherwise. Several
// rows of x (T > 1: the tiles of 4 rows and the rows after them, partial panels of 16 rows).
// Weights packed at load (matmul_q8a_packed.h) against the same ref, and ignored below AVX-512.
// Calls outside the definition (other kinds) are MatMul's, bit for bit.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "core/gguf_blocks.h"
#include "core/q8_blocks.h"
#include "gtest/gtest.h"
#include "kernels/cpu/kernels.h"
#include "kernels/gguf_test_util.h"
#include "kernels/ref/kernels.h"
#include "kernels/test_util.h"
#include "ops/backend.h"

namespace g4 {
namespace {

using testing::FloatBuffer;
using testing::GgufTensor;
using testing::RandomFloats;

// sum_k |x_k w_k| of row n: the scale of f32 summation error.
double AbsDot(const TensorView& w, int64_t n, const float* x) {
  const int64_t K = w.dim(1);
  std::vector<float> row(static_cast<size_t>(K));
  const uint8_t* bytes = static_cast<const uint8_t*>(w.data) + n * w.quant.row_bytes;
  DequantizeGgufRow(w.quant.kind, bytes, K, row.data());
  double s = 0.0;
  for (int64_t k = 0; k < K; ++k) s += std::fabs(double{x[k]} * row[static_cast<size_t>(k)]);
  return s;
}

TEST(QuantizeQ8Blocks, ScalesRoundsAndSums) {
  std::vector<float> x(64, 0.0f);  // block 0 all zero; block 1: max 2.54, a tie, a negative
  x[32] = 2.54f;
  x[33] = -1.27f;
  x[34] = 0.01f;
  x[35] = 0.015f;  // 0.015 / 0.02 = 0.75 -> 1
  std::vector<int8_t> q(64);
  float d[2];
  int32_t s[2];
  QuantizeQ8Blocks(x.data(), 64, q.data(), d, s);
  EXPECT_EQ(d[0], 0.0f);
  EXPECT_EQ(s[0], 0);
  EXPECT_TRUE(std::all_of(q.begin(), q.begin() + 32, [](int8_t v) { return v == 0; }));
  EXPECT_FLOAT_EQ(d[1], 2.54f / 127.0f);
  EXPECT_EQ(q[32], 127);
  EXPECT_EQ(q[33], -64);  // -63.5 rounds away from zero
  EXPECT_EQ(q[34], 1);   // 0.5 rounds away from zero
  EXPECT_EQ(q[35], 1);
  EXPECT_EQ(s[1], 127 - 64 + 1 + 1);
}

// Every x * id the quantizer rounds, against roundf clamped to [-127, 127]: random blocks whose
// values sit at, just below and just above the halves (and the +-127 ends).
TEST(QuantizeQ8Blocks, RoundsAsRoundf) {
  std::vector<float> x;
  for (int i = -254; i <= 254; ++i) {  // the halves in units of d = 1 / 127 * 127 = 1
    const float h = 0.5f * static_cast<float>(i);
    for (float v : {h, std::nextafter(h, -200.0f), std::nextafter(h, 200.0f)}) x.push_back(v);
  }
  const std::vector<float> noise = RandomFloats(32 * 64, 3, -127.0f, 127.0f);
  x.insert(x.end(), noise.begin(), noise.end());
  while (x.size() % 31 != 0) x.push_back(0.25f);
  // Blocks of 31 values and a 127 (d = 1, id = 1: the values are what gets rounded).
  std::vector<float> blocks;
  for (size_t i = 0; i < x.size(); i += 31) {
    blocks.insert(blocks.end(), x.begin() + static_cast<std::ptrdiff_t>(i),
                  x.begin() + static_cast<std::ptrdiff_t>(i + 31));
    blocks.push_back(127.0f);
  }
  const int64_t K = static_cast<int64_t>(blocks.size());
  std::vector<int8_t> q(static_cast<size_t>(K));
  std::vector<float> d(static_cast<size_t>(K / 32));
  std::vector<int32_t> s(static_cast<size_t>(K / 32));
  QuantizeQ8Blocks(blocks.data(), K, q.data(), d.data(), s.data());
  for (int64_t k = 0; k < K; ++k) {
    const float v = blocks[static_cast<size_t>(k)] * (1.0f / d[static_cast<size_t>(k / 32)]);
    const float want = std::clamp(std::roundf(v), -127.0f, 127.0f);
    ASSERT_EQ(q[static_cast<size_t>(k)], static_cast<int8_t>(want)) << "value " << v;
  }
}

class MatMulQ8aTest : public ::testing::TestWithParam<std::tuple<QuantKind, int, std::string>> {};

TEST_P(MatMulQ8aTest, CpuMatchesRefOnOddShapes) {
  const auto [kind, threads, target] = GetParam();
  const testing::ScopedTarget scoped_target(target);
  ASSERT_TRUE(scoped_target.ok()) << target;
  ThreadPool pool(threads);
  uint32_t seed = 11;
  double worst = 0.0;
  const int64_t elems = GgufBlockFormat(kind).elems;
  for (int64_t blocks : elems == 32 ? std::vector<int64_t>{1, 2, 3, 5, 7, 20, 48, 67}
                                    : std::vector<int64_t>{1, 2, 3, 8}) {
    const int64_t K = elems * blocks;
    for (int64_t N : {1, 3, 5, 17, 70}) {
      for (bool misalign : {false, true}) {
        SCOPED_TRACE("K=" + std::to_string(K) + " N=" + std::to_string(N) +
                     " misalign=" + std::to_string(misalign));
        const GgufTensor w(kind, N, K, misalign, seed++);
        const FloatBuffer x(RandomFloats(K, seed++), misalign);
        FloatBuffer y(N, misalign);
        std::fill(y.data(), y.data() + N, NAN);
        std::vector<float> ref(static_cast<size_t>(N));
        cpu::MatMulQ8a(pool, w.view(), x.data(), 1, y.data());
        ref::MatMulQ8a(pool, w.view(), x.data(), 1, ref.data());
        for (int64_t n = 0; n < N; ++n) {
          const double e = std::fabs(double{y.data()[n]} - ref[static_cast<size_t>(n)]) /
                           AbsDot(w.view(), n, x.data());
          ASSERT_LE(e, 1e-5) << "row " << n;  // NaN (an unwritten row) fails too
          worst = std::max(worst, e);
        }
      }
    }
  }
  std::printf("%s %s (%s): max |cpu - ref| / sum|x w| = %.3g\n", QuantKindName(kind),
              target.c_str(), cpu::MatMulQ8aKernel(), worst);
}

// Model widths, split over 3 threads (every worker reads the caller's quantized x): Gemma 3
// 270M's head K (640), E2B's hidden (1536) and MLP down (6144).
TEST_P(MatMulQ8aTest, CpuMatchesRefAtModelWidths) {
  const auto [kind, threads, target] = GetParam();
  const testing::ScopedTarget scoped_target(target);
  ASSERT_TRUE(scoped_target.ok()) << target;
  ThreadPool pool(threads);
  for (auto [N, K] : {std::pair<int64_t, int64_t>{1031, 640}, {259, 1536}, {67, 6144}}) {
    if (K % GgufBlockFormat(kind).elems != 0) continue;  // 640: no Q4_K rows
    SCOPED_TRACE("N=" + std::to_string(N) + " K=" + std::to_string(K));
    const GgufTensor w(kind, N, K, /*misalign=*/true, 21);
    const FloatBuffer x(RandomFloats(K, 22), /*misalign=*/true);
    std::vector<float> y(static_cast<size_t>(N), NAN), ref(static_cast<size_t>(N));
    cpu::MatMulQ8a(pool, w.view(), x.data(), 1, y.data());
    ref::MatMulQ8a(pool, w.view(), x.data(), 1, ref.data());
    for (int64_t n = 0; n < N; ++n) {
      const double e = std::fabs(double{y[n]} - ref[n]) / AbsDot(w.view(), n, x.data());
      ASSERT_LE(e, 2e-5) << "row " << n;
    }
  }
}

// Several rows of x (prefill chunks, batches): T below, at and past the kernel's tiles of 4 rows,
// each row of y against the ref's row of the same x row.
TEST_P(MatMulQ8aTest, CpuMatchesRefForSeveralRowsOfX) {
  const auto [kind, threads, target] = GetParam();
  const testing::ScopedTarget scoped_target(target);
  ASSERT_TRUE(scoped_target.ok()) << target;
  ThreadPool pool(threads);
  uint32_t seed = 31;
  const int64_t elems = GgufBlockFormat(kind).elems;
  const std::vector<std::pair<int64_t, int64_t>> shapes =
      elems == 32 ? std::vector<std::pair<int64_t, int64_t>>{{5, 7}, {17, 48}, {70, 3}, {33, 67}}
                  : std::vector<std::pair<int64_t, int64_t>>{{5, 1}, {17, 6}, {70, 2}, {33, 3}};
  for (int64_t T : {2, 8, 9, 19}) {
    for (auto [N, blocks] : shapes) {
      const int64_t K = elems * blocks;
      SCOPED_TRACE("T=" + std::to_string(T) + " K=" + std::to_string(K) +
                   " N=" + std::to_string(N));
      const GgufTensor w(kind, N, K, /*misalign=*/true, seed++);
      const FloatBuffer x(RandomFloats(T * K, seed++), /*misalign=*/true);
      FloatBuffer y(T * N, /*misalign=*/true);
      std::fill(y.data(), y.data() + T * N, NAN);
      std::vector<float> ref(static_cast<size_t>(T * N));
      cpu::MatMulQ8a(pool, w.view(), x.data(), T, y.data());
      ref::MatMulQ8a(pool, w.view(), x.data(), T, ref.data());
      for (int64_t t = 0; t < T; ++t) {
        for (int64_t n = 0; n < N; ++n) {
          const double e = std::fabs(double{y.data()[t * N + n]} - ref[t * N + n]) /
                           AbsDot(w.view(), n, x.data() + t * K);
          ASSERT_LE(e, 1e-5) << "row " << t << " column " << n;  // NaN fails too
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(KindsPoolsTargets, MatMulQ8aTest,
                         ::testing::Combine(::testing::Values(QuantKind::kQ8_0, QuantKind::kQ4_0,
                                                              QuantKind::kQ5_0, QuantKind::kQ4_K,
                                                              QuantKind::kQ6_K),
                                            ::testing::Values(1, 3),
                                            ::testing::ValuesIn(testing::Targets())),
                         testing::ParamNames());

// Panels packed at load (kernels/cpu/matmul_q8a_packed.h: 16 rows whose int32 lanes are rows,
// pairs of blocks, the Q5_0 fifth bits as masks; Q6_K's ql / qh lines) against the ref on the
// unpacked rows (Q6_K: blocks of 256, so the same block counts up to K = 8192): N that
// leaves a partial last panel and odd panel counts (the tiles take panels two at a time), odd
// block counts (a zero block completes the last pair), T = 1 (decode) and T past the tiles of 4
// rows of x, 1 and 3 threads; then the same views with the target pinned to AVX2 (the AVX2
// panel kernels; Q8_0's random bytes include q = -128) and to the last target, where the panels
// are ignored.
class MatMulQ8aPackedTest : public ::testing::TestWithParam<std::tuple<QuantKind, int>> {};

TEST_P(MatMulQ8aPackedTest, PanelsMatchRef) {
  const auto [kind, threads] = GetParam();
  ThreadPool pool(threads);
  uint32_t seed = 51;
  const std::vector<std::string> targets = testing::Targets();
  for (int64_t T : {1, 2, 5, 9}) {
    // The last three: the 270M's Q5_0 gate / up [2048, 640], a K of 2048, its q [1024, 640].
    for (auto [N, blocks] : std::vector<std::pair<int64_t, int64_t>>{
             {1, 1}, {16, 2}, {17, 3}, {33, 48}, {70, 7}, {47, 20}, {2048, 20}, {640, 64},
             {1024, 20}}) {
      const int64_t K = GgufBlockFormat(kind).elems * blocks;
      if (K > 8192) continue;  // Q6_K: blocks of 256
      SCOPED_TRACE("T=" + std::to_string(T) + " K=" + std::to_string(K) +
                   " N=" + std::to_string(N));
      const GgufTensor w(kind, N, K, /*misalign=*/true, seed++);
      const PackedWeight panels = cpu::PackQ8aWeight(pool, w.view());
      if (!panels.panels) GTEST_SKIP() << "this CPU's path does not pack " << QuantKindName(kind);
      TensorView packed = w.view();
      SetPanels(panels, &packed);
      const FloatBuffer x(RandomFloats(T * K, seed++), /*misalign=*/true);
      std::vector<float> ref(static_cast<size_t>(T * N));
      ref::MatMulQ8a(pool, w.view(), x.data(), T, ref.data());
      for (const std::string& target : {targets.front(), std::string("AVX2"), targets.back()}) {
        const testing::ScopedTarget scoped_target(target);
        if (!scoped_target.ok()) continue;  // AVX2 not compiled in
        SCOPED_TRACE(target);
        std::vector<float> y(static_cast<size_t>(T * N), NAN);
        cpu::MatMulQ8a(pool, packed, x.data(), T, y.data());
        for (int64_t t = 0; t < T; ++t) {
          for (int64_t n = 0; n < N; ++n) {
            const double e = std::fabs(double{y[t * N + n]} - ref[t * N + n]) /
                             AbsDot(w.view(), n, x.data() + t * K);
            ASSERT_LE(e, 1e-5) << "row " << t << " column " << n;  // NaN fails too
          }
        }
      }
    }
  }
}

// The path is chosen from a cached answer (SupportedTargetBits: Highway's own query runs cpuid,
// which a VM traps), so pinning a target and lifting the pin must each be seen by the next call.
TEST(MatMulQ8a, KernelFollowsThePinnedTarget) {
  const std::string best = cpu::MatMulQ8aKernel();
  {
    const testing::ScopedTarget avx2("AVX2");
    if (avx2.ok()) {
      EXPECT_STREQ(cpu::MatMulQ8aKernel(), "avx2");
    }
  }
  {
    const testing::ScopedTarget scalar(testing::Targets().back());
    ASSERT_TRUE(scalar.ok());
    if (testing::Targets().size() > 1) {
      EXPECT_STRNE(cpu::MatMulQ8aKernel(), "vnni512");
    }
  }
  EXPECT_EQ(cpu::MatMulQ8aKernel(), best);
}

// Kinds without panels are not packed (their calls keep the per-row kernels); the avx2 path
// packs the same kinds as vnni512.
TEST(MatMulQ8aPacked, OnlyTheKindsWithPanelsAreRepacked) {
  ThreadPool pool(1);
  for (QuantKind kind : {QuantKind::kQ4_K, QuantKind::kQ4_1}) {
    const GgufTensor w(kind, 3, 256, /*misalign=*/false, 5);
    EXPECT_EQ(cpu::PackQ8aWeight(pool, w.view()).panels, nullptr) << QuantKindName(kind);
  }
  const testing::ScopedTarget avx2("AVX2");
  if (!avx2.ok()) GTEST_SKIP() << "AVX2 is not available here";
  for (QuantKind kind : {QuantKind::kQ4_0, QuantKind::kQ5_0, QuantKind::kQ8_0, QuantKind::kQ6_K}) {
    const GgufTensor w(kind, 3, 256, /*misalign=*/false, 5);
    EXPECT_NE(cpu::PackQ8aWeight(pool, w.view()).panels, nullptr) << QuantKindName(kind);
  }
}

INSTANTIATE_TEST_SUITE_P(KindsPools, MatMulQ8aPackedTest,
                         ::testing::Combine(::testing::Values(QuantKind::kQ8_0, QuantKind::kQ4_0,
                                                              QuantKind::kQ5_0, QuantKind::kQ6_K),
                                            ::testing::Values(1, 3)),
                         testing::ParamNames());

// x of integers in [-127, 127] with a +-127 in every block quantizes exactly (d = 1), so the
// integer path must give the exact matvec; random x stays within x's rounding: per block
// |x - d q| <= d / 2, d = absmax / 127, so |y - exact| <= sum_b (d_b / 2) sum_j |w_bj|.
TEST(MatMulQ8aRef, EqualsExactMatMulUpToTheRoundingOfX) {
  ThreadPool pool(1);
  for (QuantKind kind :
       {QuantKind::kQ8_0, QuantKind::kQ4_0, QuantKind::kQ5_0, QuantKind::kQ4_K, QuantKind::kQ6_K}) {
    const int64_t N = 9, K = 256 * 2;
    const GgufTensor w(kind, N, K, false, 5);
    std::vector<float> xi(static_cast<size_t>(K));
    for (int64_t k = 0; k < K; ++k) {
      xi[static_cast<size_t>(k)] = static_cast<float>((k * 37) % 255 - 127);
    }
    for (int64_t b = 0; b < K / 32; ++b) {
      xi[static_cast<size_t>(32 * b + b % 32)] = (b % 2 ? -127.0f : 127.0f);
    }
    const std::vector<float> xr = RandomFloats(K, 6);
    for (const std::vector<float>* x : {static_cast<const std::vector<float>*>(&xi), &xr}) {
      std::vector<float> q8(N), exact(N);
      ref::MatMulQ8a(pool, w.view(), x->data(), 1, q8.data());
      ref::MatMul(pool, w.view(), x->data(), 1, exact.data());
      std::vector<float> row(static_cast<size_t>(K));
      for (int64_t n = 0; n < N; ++n) {
        const uint8_t* bytes =
            static_cast<const uint8_t*>(w.view().data) + n * w.view().quant.row_bytes;
        DequantizeGgufRow(kind, bytes, K, row.data());
        double bound = 0.0;
        for (int64_t b = 0; b < K / 32; ++b) {
          float amax = 0.0f, wsum = 0.0f;
          for (int j = 0; j < 32; ++j) {
            amax = std::max(amax, std::fabs((*x)[static_cast<size_t>(32 * b + j)]));
            wsum += std::fabs(row[static_cast<size_t>(32 * b + j)]);
          }
          bound += amax / 127.0 / 2.0 * wsum;
        }
        const double err = std::fabs(double{q8[n]} - exact[n]);
        if (x == &xi) {
          EXPECT_LE(err, 1e-6 * AbsDot(w.view(), n, x->data()))
              << QuantKindName(kind) << " row " << n;
        } else {
          EXPECT_LE(err, bound * 1.0001 + 1e-6) << QuantKindName(kind) << " row " << n;
          EXPECT_GT(bound, 0.0);
        }
      }
    }
  }
}

// Outside the definition MatMulQ8a is MatMul: kinds without an integer kernel.
TEST(MatMulQ8a, IsMatMulOutsideItsDefinition) {
  ThreadPool pool(2);
  const int64_t N = 7, K = 256;
  for (QuantKind kind : testing::kGgufKinds) {
    const GgufTensor w(kind, N, K, false, 9);
    for (int64_t T : {1, 3}) {
      if (UsesQ8Activations(w.view(), T)) continue;
      const std::vector<float> x = RandomFloats(T * K, 10);
      std::vector<float> a(static_cast<size_t>(T * N)), b(static_cast<size_t>(T * N));
      cpu::MatMulQ8a(pool, w.view(), x.data(), T, a.data());
      cpu::MatMul(pool, w.view(), x.data(), T, b.data());
      EXPECT_EQ(a, b) << QuantKindName(kind) << " T=" << T;
    }
  }
  EXPECT_TRUE(UsesQ8Activations(GgufTensor(QuantKind::kQ8_0, 1, 32, false, 1).view(), 1));
  EXPECT_TRUE(UsesQ8Activations(GgufTensor(QuantKind::kQ8_0, 1, 32, false, 1).view(), 2));
  EXPECT_TRUE(UsesQ8Activations(GgufTensor(QuantKind::kQ4_0, 1, 32, false, 1).view(), 9));
  EXPECT_TRUE(UsesQ8Activations(GgufTensor(QuantKind::kQ4_K, 1, 256, false, 1).view(), 2));
  EXPECT_TRUE(UsesQ8Activations(GgufTensor(QuantKind::kQ6_K, 1, 256, false, 1).view(), 2));
  EXPECT_FALSE(UsesQ8Activations(GgufTensor(QuantKind::kQ5_K, 1, 256, false, 1).view(), 1));
  EXPECT_TRUE(UsesQ8Activations(GgufTensor(QuantKind::kQ6_K, 1, 256, false, 1).view(), 1));
  EXPECT_TRUE(UsesQ8Activations(GgufTensor(QuantKind::kQ4_K, 1, 256, false, 1).view(), 1));
}

TEST(MatMulQ8a, BackendStatesAndRunsIt) {
  EXPECT_EQ(*ParseMatVec("q8"), MatVec::kQ8);
  EXPECT_EQ(*ParseMatVec("exact"), MatVec::kExact);
  const auto bad = ParseMatVec("int8");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("exact, q8"), std::string::npos);
  Backend exact(BackendKind::kCpu, 1), q8(BackendKind::kCpu, 1, MatVec::kQ8);
  EXPECT_NE(exact.PolicyString().find("matvec=exact"), std::string::npos);
  EXPECT_NE(q8.PolicyString().find(std::string("matvec=q8:") + cpu::MatMulQ8aKernel()),
            std::string::npos)
      << q8.PolicyString();
  const GgufTensor w(QuantKind::kQ8_0, 5, 64, false, 3);
  const std::vector<float> x = RandomFloats(64, 4);
  std::vector<float> a(5), b(5);
  q8.MatMul(w.view(), x.data(), 1, a.data());
  cpu::MatMulQ8a(q8.pool(), w.view(), x.data(), 1, b.data());
  EXPECT_EQ(a, b);
  const auto cuda = Backend::Create(BackendKind::kCuda, 1, MatVec::kQ8);
  EXPECT_FALSE(cuda.ok());
}

}  // namespace
}  // namespace g4
