// ResidualNorm (ops/residual_norm.h) against ref::ResidualNorm (h = (h + RmsNorm(x) * w) *
// scale, then out = RmsNorm(h) * next_w) on every backend (op_backend.h): weights
// none/F32/BF16/F16 in every pairing, odd widths and row counts, misaligned buffers, scale 1 and
// not, with and without the second norm.
// Error measure: per row, max |y - ref| / max |ref| (h can cancel to ~0 element-wise, so a
// per-element relative error would judge rounding of the addends, not the kernel); out is
// judged against the ref's RmsNorm of the kernel's h. The terms carry RmsNorm's error
// (rms_norm_test.h): ~3e-6 at worst on the CPU (tolerance 1e-5), ~2e-5 on CUDA (5e-5).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels/op_backend.h"
#include "kernels/ref/kernels.h"
#include "kernels/test_util.h"

namespace g4::testing {

struct ResidualNormInputs {
  std::vector<float> x, h;
  std::optional<StoredTensor> w, next_w;
};

// x and h of comparable size, so the sums neither vanish nor swamp the normed term.
inline ResidualNormInputs MakeResidualNormInputs(std::optional<DType> wt,
                                                 std::optional<DType> nt, int64_t R, int64_t D,
                                                 bool misalign, uint32_t seed) {
  ResidualNormInputs in;
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

struct ResidualNormResult {
  std::vector<float> h, out;
};

template <typename Fn>
ResidualNormResult RunResidualNorm(Fn fn, ThreadPool& pool, const ResidualNormInputs& in,
                                   int64_t R, int64_t D, float scale, bool with_out,
                                   bool misalign) {
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

class ResidualNormTest : public OpBackendTest {};

TEST_P(ResidualNormTest, MatchesRef) {
  const double tol = backend().device ? 5e-5 : 1e-5;
  uint32_t seed = 10;
  for (const std::optional<DType>& w_type : kNormWeights) {
    for (int64_t D : {1, 7, 31, 256, 1537, 2049}) {
      for (int64_t R : {1, 3, 40}) {
        for (const std::optional<DType>& next_type : kNormWeights) {
          for (bool misalign : {false, true}) {
            for (float scale : {1.0f, 0.37f}) {
              SCOPED_TRACE("w=" + ParamPart(w_type) + " D=" + std::to_string(D) +
                           " R=" + std::to_string(R) + " next=" + ParamPart(next_type) +
                           " misalign=" + std::to_string(misalign) +
                           " scale=" + std::to_string(scale));
              const ResidualNormInputs in =
                  MakeResidualNormInputs(w_type, next_type, R, D, misalign, seed += 4);
              // R == 3 without next_w: no second norm; otherwise also a second norm without a
              // weight.
              const bool with_out = next_type.has_value() || R != 3;
              const ResidualNormResult c = RunResidualNorm(ops().residual_norm, pool(), in, R, D,
                                                           scale, with_out, misalign);
              const ResidualNormResult r =
                  RunResidualNorm(ref::ResidualNorm, pool(), in, R, D, scale, with_out, misalign);
              WeightDied();  // the next weights may reuse these addresses
              ASSERT_LE(MaxRowError(c.h, r.h, D, in.h, scale), tol);
              if (with_out) {  // out against the ref's norm of the kernel's own h, so a
                // cancelled h's rounding (judged above) is not amplified into the second norm
                std::vector<float> want(c.h.size());
                ref::RmsNorm(pool(), c.h.data(), in.next_w ? in.next_w->view() : TensorView{},
                             R, D, 1e-6f, want.data());
                ASSERT_LE(MaxRowError(c.out, want, D), tol);
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace g4::testing
