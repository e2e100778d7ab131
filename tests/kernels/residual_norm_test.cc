// g4::cpu::ResidualNorm against g4::ref::ResidualNorm (h = (h + RmsNorm(x) * w) * scale, then
// out = RmsNorm(h) * next_w), and the ref against the formula in f64: weights none/F32/BF16/F16
// in every pairing, odd widths and row counts, misaligned buffers, scale 1 and not, with and
// without the second norm, pools of 1 and 3 threads, every compiled SIMD target.
// Error measure: per row, max |y - ref| / max |ref| (h can cancel to ~0 element-wise, so a
// per-element relative error would judge rounding of the addends, not the kernel); out is
// judged against the ref's RmsNorm of the kernel's h. The CPU
// kernel's terms carry RmsNorm's ~3e-6 at worst (rms_norm_test.cc); tolerance 1e-5.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
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
using testing::MaxRowError;
using testing::RandomFloats;
using testing::StoredTensor;

constexpr double kTol = 1e-5;

struct Inputs {
  std::vector<float> x, h;
  std::optional<StoredTensor> w, next_w;
};

// x and h of comparable size, so the sums neither vanish nor swamp the normed term.
Inputs MakeInputs(std::optional<DType> wt, std::optional<DType> nt, int64_t R, int64_t D,
                  bool misalign, uint32_t seed) {
  Inputs in;
  in.x = RandomFloats(R * D, seed, -3.0f, 3.0f);
  in.h = RandomFloats(R * D, seed + 1, -2.0f, 2.0f);
  if (wt) {
    in.w.emplace(RandomFloats(D, seed + 2, -0.5f, 2.0f), *wt, std::vector<int64_t>{D}, misalign);
  }
  if (nt) {
    in.next_w.emplace(RandomFloats(D, seed + 3, -0.5f, 2.0f), *nt, std::vector<int64_t>{D},
                      misalign);
  }
  return in;
}

struct Result {
  std::vector<float> h, out;
};

template <typename Fn>
Result RunOp(Fn fn, ThreadPool& pool, const Inputs& in, int64_t R, int64_t D, float scale,
           bool with_out, bool misalign) {
  FloatBuffer x(in.x, misalign), h(in.h, misalign), out(R * D, misalign);
  ResidualNormArgs a;
  a.x = x.data();
  a.w = in.w ? &in.w->view() : nullptr;
  a.h = h.data();
  a.scale = scale;
  a.next_w = in.next_w ? &in.next_w->view() : nullptr;
  a.out = with_out ? out.data() : nullptr;
  a.R = R, a.D = D, a.eps = 1e-6f;
  fn(pool, a);
  return {h.ToVector(R * D), with_out ? out.ToVector(R * D) : std::vector<float>{}};
}

std::optional<DType> WeightType(int i) {
  return i < 0 ? std::nullopt : std::optional<DType>(testing::kFloatDTypes[i]);
}

class ResidualNormTest : public ::testing::TestWithParam<std::tuple<int, int, std::string>> {};

TEST_P(ResidualNormTest, MatchesRef) {
  const auto [w_index, threads, target] = GetParam();
  const testing::ScopedTarget scoped_target(target);
  ASSERT_TRUE(scoped_target.ok()) << target;
  ThreadPool pool(threads);
  uint32_t seed = 10;
  for (int64_t D : {1, 7, 31, 256, 1537}) {
    for (int64_t R : {1, 3, 40}) {
      for (int next_index = -1; next_index < 3; ++next_index) {
        for (bool misalign : {false, true}) {
          for (float scale : {1.0f, 0.37f}) {
            SCOPED_TRACE("D=" + std::to_string(D) + " R=" + std::to_string(R) + " next=" +
                         std::to_string(next_index) + " misalign=" + std::to_string(misalign) +
                         " scale=" + std::to_string(scale));
            const Inputs in =
                MakeInputs(WeightType(w_index), WeightType(next_index), R, D, misalign, seed += 4);
            // R == 3 without next_w: no second norm; otherwise also a second norm without weight
            const bool with_out = next_index != -1 || R != 3;
            const Result c = RunOp(cpu::ResidualNorm, pool, in, R, D, scale, with_out, misalign);
            const Result r = RunOp(ref::ResidualNorm, pool, in, R, D, scale, with_out, misalign);
            ASSERT_LE(MaxRowError(c.h, r.h, D, in.h, scale), kTol);
            if (with_out) {  // out against the ref's norm of the kernel's own h, so a
              // cancelled h's rounding (judged above) is not amplified into the second norm
              std::vector<float> want(c.h.size());
              ref::RmsNorm(pool, c.h.data(), in.next_w ? in.next_w->view() : TensorView{}, R, D,
                           1e-6f, want.data());
              ASSERT_LE(MaxRowError(c.out, want, D), kTol);
            }
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(WeightsPoolsTargets, ResidualNormTest,
                         ::testing::Combine(::testing::Values(-1, 0, 1, 2), ::testing::Values(1, 3),
                                            ::testing::ValuesIn(testing::Targets())),
                         [](const auto& info) {
                           const int w = std::get<0>(info.param);
                           return std::string(w < 0 ? "NoWeight"
                                                    : DTypeName(testing::kFloatDTypes[w])) +
                                  "_threads" + std::to_string(std::get<1>(info.param)) + "_" +
                                  std::get<2>(info.param);
                         });

// The ref against the formula in f64, element by element.
TEST(ResidualNormRef, IsTheFormula) {
  ThreadPool pool(1);
  const int64_t R = 3, D = 45;
  const Inputs in = MakeInputs(DType::kBF16, DType::kF32, R, D, false, 7);
  const float scale = 0.8f;
  const Result r = RunOp(ref::ResidualNorm, pool, in, R, D, scale, true, false);
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
  const Inputs in = MakeInputs(DType::kF16, DType::kBF16, R, D, false, 99);
  Result c = RunOp(cpu::ResidualNorm, pool, in, R, D, 1.0f, true, false);
  const Result r = RunOp(ref::ResidualNorm, pool, in, R, D, 1.0f, true, false);
  EXPECT_LE(MaxRowError(c.out, r.out, D), kTol / 4);
  double row_max = 0.0;  // row 1 holds element 300
  for (int64_t d = D; d < 2 * D; ++d) row_max = std::max(row_max, std::fabs(double{r.out[d]}));
  c.out[300] += static_cast<float>(2 * kTol * row_max);
  EXPECT_GT(MaxRowError(c.out, r.out, D), kTol);
}

}  // namespace
}  // namespace g4
