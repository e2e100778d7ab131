// g4::cpu::MatMul on quantized weights (int4 groups in the compressed-tensors layout, int8 groups)
// against g4::ref::MatMul, which dequantizes element by element: every compiled SIMD target,
// scale dtypes BF16/F16/F32, group sizes that are and are not multiples of the SIMD chunk (2L
// nibbles / L bytes), odd int4 groups (scalar path), T = 1 (fused decode) and T > 1 (dequantized
// panels), odd N (row tails of the 4-row tile), padded row strides and misaligned x, weights and
// scales, pools of 1 and 3 threads.
// Tolerance as for float weights (matmul_test.cc): |y - ref| <= 1e-5 * sum_k |x_k w_k|; every
// dequantized weight q * scale is exact in f32, so the only difference is f32 accumulation.

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/kernels.h"
#include "kernels/ref/kernels.h"
#include "kernels/test_util.h"
#include "ops/quantize.h"

namespace g4 {
namespace {

using testing::FloatBuffer;
using testing::RandomFloats;

constexpr double kTol = 1e-5;

// A quantized [N, K] weight with random q and scales, rows `row_bytes` apart (>= the packed
// size, so a padded stride is exercised), data and scales one byte / one element past an
// aligned address when `misalign` is set.
class QuantTensor {
 public:
  QuantTensor(QuantKind kind, int64_t N, int64_t K, int64_t G, DType scale_dtype, bool misalign,
              uint32_t seed, int64_t extra_row_bytes = 0)
      : data_(static_cast<size_t>(N * (QuantRowBytes(kind, K) + extra_row_bytes) + 64)),
        scales_(static_cast<size_t>(N * (K / G) + 1) * 4 + 64) {
    std::mt19937 rng(seed);
    const int64_t row_bytes = QuantRowBytes(kind, K) + extra_row_bytes;
    uint8_t* d = data_.data() + (misalign ? 1 : 0);
    for (int64_t i = 0; i < N * row_bytes; ++i) d[i] = static_cast<uint8_t>(rng());
    if (kind == QuantKind::kInt8Group) {  // q in [-127, 127]: -128 is never written
      for (int64_t i = 0; i < N * row_bytes; ++i) {
        if (d[i] == 0x80) d[i] = 0x81;
      }
    }
    const size_t ssize = DTypeSize(scale_dtype);
    uint8_t* s = scales_.data() + (misalign ? ssize : 0);
    std::uniform_real_distribution<float> dist(-0.1f, 0.1f);
    for (int64_t i = 0; i < N * (K / G); ++i) {
      const float v = dist(rng);
      if (scale_dtype == DType::kF32) {
        std::memcpy(s + i * 4, &v, 4);
      } else {
        const uint16_t b = scale_dtype == DType::kBF16 ? F32ToBf16(v) : F32ToF16(v);
        std::memcpy(s + i * 2, &b, 2);
      }
    }
    view_ = TensorView(d, kind == QuantKind::kInt4Group ? DType::kU8 : DType::kI8, {N, K},
                       QuantInfo{kind, s, scale_dtype, G, row_bytes});
  }
  const TensorView& view() const { return view_; }

 private:
  std::vector<uint8_t> data_, scales_;
  TensorView view_;
};

std::vector<double> AbsScale(const TensorView& w, const float* x, int64_t T) {
  const int64_t N = w.dim(0), K = w.dim(1);
  std::vector<double> s(static_cast<size_t>(T * N), 0.0);
  for (int64_t n = 0; n < N; ++n) {
    std::vector<double> row(static_cast<size_t>(K));
    for (int64_t k = 0; k < K; ++k) row[k] = std::fabs(w.at(n * K + k));
    for (int64_t t = 0; t < T; ++t) {
      double acc = 0.0;
      for (int64_t k = 0; k < K; ++k) acc += std::fabs(x[t * K + k]) * row[k];
      s[t * N + n] = acc;
    }
  }
  return s;
}

// max |cpu - ref| / scale over every output; NaN (an unwritten output) propagates.
double RunAndCompare(ThreadPool& pool, const TensorView& w, int64_t T, bool misalign,
                     uint32_t seed) {
  const int64_t N = w.dim(0), K = w.dim(1);
  const FloatBuffer x(RandomFloats(T * K, seed), misalign);
  FloatBuffer y(T * N, misalign);
  for (int64_t i = 0; i < T * N; ++i) y.data()[i] = NAN;
  std::vector<float> ref(static_cast<size_t>(T * N));
  cpu::MatMul(pool, w, x.data(), T, y.data());
  ref::MatMul(pool, w, x.data(), T, ref.data());
  const std::vector<double> scale = AbsScale(w, x.data(), T);
  double worst = 0.0;
  for (int64_t i = 0; i < T * N; ++i) {
    const double err = std::fabs(static_cast<double>(y.data()[i]) - ref[i]);
    const double e = scale[i] > 0 ? err / scale[i] : (err > 0 ? INFINITY : 0.0);
    if (!(e <= worst)) worst = e;
  }
  return worst;
}

class QuantMatMulTest
    : public ::testing::TestWithParam<std::tuple<QuantKind, DType, int, std::string>> {};

TEST_P(QuantMatMulTest, MatchesRefOnOddShapes) {
  const auto [kind, scale_dtype, threads, target] = GetParam();
  const testing::ScopedTarget scoped_target(target);
  ASSERT_TRUE(scoped_target.ok()) << target;
  ThreadPool pool(threads);
  // (group size, groups per row): multiples of every target's chunk (32, 64, 128; 32 with K a
  // multiple of 128 takes the AVX-512 block-128 decode path), groups that leave a tail (6, 8 on
  // 8- and 16-lane targets, 5 and 3: odd int4 groups take the scalar path).
  const std::vector<std::pair<int64_t, int64_t>> groups = {
      {32, 1}, {32, 3}, {32, 4}, {32, 12}, {64, 2}, {128, 3}, {8, 5}, {6, 7}, {5, 4}, {3, 5},
      {48, 1}};
  uint32_t seed = 1;
  for (auto [G, ng] : groups) {
    const int64_t K = G * ng;
    for (int64_t N : {1, 3, 6, 17}) {
      for (int64_t T : {1, 2, 3, 5, 17}) {
        for (bool misalign : {false, true}) {
          SCOPED_TRACE("G=" + std::to_string(G) + " K=" + std::to_string(K) +
                       " N=" + std::to_string(N) + " T=" + std::to_string(T) +
                       " misalign=" + std::to_string(misalign));
          const QuantTensor w(kind, N, K, G, scale_dtype, misalign, seed++, misalign ? 4 : 0);
          ASSERT_LE(RunAndCompare(pool, w.view(), T, misalign, seed++), kTol);
        }
      }
    }
  }
}

// E2B widths: hidden 1536 (attention, MLP up), 6144 (MLP down), per-row int8 (G = K) as the LM
// head copy uses; N spans several 4-row tiles and panels per thread.
TEST_P(QuantMatMulTest, MatchesRefAtModelWidths) {
  const auto [kind, scale_dtype, threads, target] = GetParam();
  const testing::ScopedTarget scoped_target(target);
  ASSERT_TRUE(scoped_target.ok()) << target;
  ThreadPool pool(threads);
  for (auto [N, K] : {std::pair<int64_t, int64_t>{259, 1536}, {67, 6144}}) {
    for (int64_t G : {int64_t{32}, K}) {
      for (int64_t T : {1, 8}) {
        SCOPED_TRACE("N=" + std::to_string(N) + " K=" + std::to_string(K) +
                     " G=" + std::to_string(G) + " T=" + std::to_string(T));
        const QuantTensor w(kind, N, K, G, scale_dtype, /*misalign=*/true, 77);
        ASSERT_LE(RunAndCompare(pool, w.view(), T, /*misalign=*/true, 78), 2 * kTol);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    KindsScalesPoolsTargets, QuantMatMulTest,
    ::testing::Combine(::testing::Values(QuantKind::kInt4Group, QuantKind::kInt8Group),
                       ::testing::ValuesIn(testing::kFloatDTypes), ::testing::Values(1, 3),
                       ::testing::ValuesIn(testing::Targets())),
    testing::ParamNames());

// The compressed-tensors nibble order (formats.md §1.3 worked example): the signed row
// [0,1,2,3,4,5,6,7] packs to the int32 word 0xFEDCBA98 and [-8,-7,-1,0,1,2,6,7] to 0xFEA98710.
// With scale 1 and x = e_k, y = q_k exactly, on every target, decode and prefill paths.
TEST(QuantMatMulExact, CompressedTensorsNibbleOrder) {
  const uint32_t words[2] = {0xFEDCBA98u, 0xFEA98710u};
  const int expected[2][8] = {{0, 1, 2, 3, 4, 5, 6, 7}, {-8, -7, -1, 0, 1, 2, 6, 7}};
  // Rows of 128 elements (every target's SIMD chunk and the AVX-512 block-128 path are used):
  // the word, then nibbles 8 (q = 0).
  const int64_t K = 128, N = 2;
  std::vector<uint8_t> data(static_cast<size_t>(N * K / 2), 0x88);  // nibbles 8: q = 0
  for (int n = 0; n < N; ++n) std::memcpy(data.data() + n * K / 2, &words[n], 4);  // LE host
  const std::vector<uint16_t> scales(static_cast<size_t>(N * K / 32), F32ToBf16(1.0f));
  const TensorView w(data.data(), DType::kU8, {N, K},
                     QuantInfo{QuantKind::kInt4Group, scales.data(), DType::kBF16, 32, K / 2});
  for (const std::string& target : testing::Targets()) {
    const testing::ScopedTarget scoped(target);
    ThreadPool pool(1);
    for (int64_t k = 0; k < 8; ++k) {
      for (int64_t T : {1, 3}) {
        std::vector<float> x(static_cast<size_t>(T * K), 0.0f), y(static_cast<size_t>(T * N));
        for (int64_t t = 0; t < T; ++t) x[t * K + k] = 1.0f;
        cpu::MatMul(pool, w, x.data(), T, y.data());
        for (int64_t t = 0; t < T; ++t) {
          EXPECT_EQ(y[t * N + 0], expected[0][k]) << target << " k=" << k << " T=" << T;
          EXPECT_EQ(y[t * N + 1], expected[1][k]) << target << " k=" << k << " T=" << T;
        }
      }
    }
  }
}

// QuantizeWeight round trip: every dequantized element is within half a step of the float
// weight, |w - q s| <= s / 2, plus the bf16 rounding of the scale (which may put the largest
// element up to 2^-8 past the clamp: 7.5 s * 2^-8 < 0.03 s).
TEST(QuantMatMulExact, QuantizedCopyTracksFloatWeights) {
  ThreadPool pool(2);
  const int64_t N = 37, K = 96;
  const std::vector<float> wf = RandomFloats(N * K, 5);
  const TensorView wv(wf.data(), DType::kF32, {N, K});
  for (auto [kind, G] : {std::pair{QuantKind::kInt8Group, K}, {QuantKind::kInt4Group, int64_t{32}}}) {
    auto q = QuantizeWeight(pool, wv, kind, G, DType::kBF16);
    ASSERT_TRUE(q.ok()) << q.status().ToString();
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t k = 0; k < K; ++k) {
        const float scale = LoadAsF32(q->view.quant.scales, DType::kBF16, n * (K / G) + k / G);
        ASSERT_LE(std::fabs(q->view.at(n * K + k) - wf[n * K + k]), 0.53f * scale)
            << QuantKindName(kind) << " n=" << n << " k=" << k;
      }
    }
  }
}

}  // namespace
}  // namespace g4
