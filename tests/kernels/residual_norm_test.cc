// g4::cpu::ResidualNorm against g4::ref::ResidualNorm (h = (h + RmsNorm(x) * w) * scale, then
// out = RmsNorm(h) * next_w), and the ref against the formula in f64: weights none/F32/BF16/F16
// in every pairing, odd widths and row counts, misaligned buffers, scale 1 and not, with and
// without the second norm, pools of 1 and 3 threads, every compiled SIMD target.
// Error measure: per row, max |y - ref| / max |ref| (h can cancel to ~0 element-wise, so a
// per-element relative error would judge rounding of the addends, not the kernel); out is
// judged against the ref's RmsNorm of the kernel's h. The CPU
// kernel's terms carry RmsNorm's ~3e-6 at worst (rms_norm_test.cc); tolerance 1e-5.
// With a projection in front (proj): the ref op is ref::MatMul then the norm, the CPU table's
// is the CPU MatMul then the CPU kernel.

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
#include "ops/backend.h"

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

class ResidualNormTest
    : public ::testing::TestWithParam<std::tuple<std::optional<DType>, int, std::string>> {};

TEST_P(ResidualNormTest, MatchesRef) {
  const auto [w_type, threads, target] = GetParam();
  const testing::ScopedTarget scoped_target(target);
  ASSERT_TRUE(scoped_target.ok()) << target;
  ThreadPool pool(threads);
  uint32_t seed = 10;
  for (int64_t D : {1, 7, 31, 256, 1537}) {
    for (int64_t R : {1, 3, 40}) {
      for (const std::optional<DType>& next_type : testing::kNormWeights) {
        for (bool misalign : {false, true}) {
          for (float scale : {1.0f, 0.37f}) {
            SCOPED_TRACE("D=" + std::to_string(D) + " R=" + std::to_string(R) + " next=" +
                         testing::ParamPart(next_type) + " misalign=" + std::to_string(misalign) +
                         " scale=" + std::to_string(scale));
            const Inputs in = MakeInputs(w_type, next_type, R, D, misalign, seed += 4);
            // R == 3 without next_w: no second norm; otherwise also a second norm without weight
            const bool with_out = next_type.has_value() || R != 3;
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
                         ::testing::Combine(::testing::ValuesIn(testing::kNormWeights),
                                            ::testing::Values(1, 3),
                                            ::testing::ValuesIn(testing::Targets())),
                         testing::ParamNames());

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
