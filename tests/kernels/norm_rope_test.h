// NormRope (ops/norm_rope.h) against ref::NormRope (ref::RmsNorm per head, then ref::Rope) on
// every backend (op_backend.h): one to three parts per call (a layer's q, k and v: v without
// weight or rotation), weights none/F32/BF16/F16, the default and the proportional RoPE (zeros
// in inv_freq), no rotation (inv_freq null), odd T and H, head dims 1 to 512 (odd ones keep
// their last element unrotated), positions up to 131071. The rotation is f64 as in the ref
// everywhere; the norm's f32 sum of squares is RmsNorm's (rms_norm_test.h): tolerance of the
// head's largest |ref|, CPU 1e-5, CUDA 3e-5.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include "kernels/op_backend.h"
#include "kernels/ref/kernels.h"
#include "kernels/test_util.h"

namespace g4::testing {

class NormRopeTest : public OpBackendTest {};

TEST_P(NormRopeTest, MatchesRefForEveryWeightDTypeAndRope) {
  const double tol = backend().device ? 3e-5 : 1e-5;
  std::mt19937 rng(7);
  uint32_t seed = 10;
  for (int64_t T : {1, 4, 5}) {
    for (int64_t H : {1, 3, 8}) {
      for (int64_t D : {1, 2, 7, 33, 64, 256, 512}) {
        for (int rope = 0; rope < 3; ++rope) {  // none, default, proportional
          const std::optional<DType> wt = kNormWeights[(seed / 3) % 4];
          const int count = 1 + static_cast<int>(seed % 3);  // q; q, k; q, k, v
          SCOPED_TRACE(::testing::Message() << "T=" << T << " H=" << H << " D=" << D
                                            << " rope=" << rope << " parts=" << count
                                            << " w=" << ParamPart(wt));
          const std::vector<float> inv = rope == 2 ? InvFreq(D, 1e6, D / 8)
                                                   : InvFreq(D, 1e4, D / 2);
          std::vector<int32_t> pos(static_cast<size_t>(T));
          std::uniform_int_distribution<int32_t> pd(0, 131071);
          for (auto& p : pos) p = pd(rng);
          const bool misalign = (seed & 1) != 0;  // the weight one element in
          const StoredTensor w(RandomFloats(D, ++seed, -0.5f, 2.0f), wt.value_or(DType::kF32),
                               {D}, misalign);
          const TensorView wv = wt ? w.view() : TensorView{};
          const int64_t heads[kMaxNormRopeParts] = {H, (H + 1) / 2, (H + 1) / 2};
          std::vector<float> x[kMaxNormRopeParts], ref[kMaxNormRopeParts];
          NormRopeArgs a, r;
          a.positions = r.positions = pos.data();
          a.T = r.T = T, a.D = r.D = D, a.eps = r.eps = 1e-6f;
          a.inv_freq = r.inv_freq = rope == 0 ? nullptr : inv.data();
          for (int p = 0; p < count; ++p) {
            x[p] = RandomFloats(T * heads[p] * D, ++seed, -3.0f, 3.0f);
            ref[p] = x[p];
            const bool v = p == 2;  // the values: no weight, no rotation
            a.Add(x[p].data(), v ? nullptr : &wv, heads[p], !v);
            r.Add(ref[p].data(), v ? nullptr : &wv, heads[p], !v);
          }
          ref::NormRope(pool(), r);
          ops().norm_rope(pool(), a);
          WeightDied();  // the next w may reuse its address
          for (int p = 0; p < count; ++p) EXPECT_LE(MaxRowError(x[p], ref[p], D), tol) << p;
        }
      }
    }
  }
}

}  // namespace g4::testing
