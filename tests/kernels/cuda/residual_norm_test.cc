// cuda::ResidualNorm against ref::ResidualNorm: weights none/F32/BF16/F16 (the two norms in
// different dtypes), odd widths (1 to 2049) and row counts, scale 1 and not, with and without
// the second norm. The kernel sums squares in f32 as cuda::RmsNorm does (rms_norm_test.cc:
// ~2e-5 of |ref| at worst); errors judged per row, on the row's largest |ref| (h may cancel to
// ~0 element-wise), out against the ref's norm of the kernel's h: tolerance 5e-5.
#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "kernels/cuda/cuda_test_util.h"
#include "kernels/ref/kernels.h"
#include "kernels/test_util.h"

namespace g4::cuda {
namespace {

using g4::testing::MaxRowError;
using g4::testing::RandomFloats;
using g4::testing::StoredTensor;
using testing::CudaOpTest;

class CudaResidualNormTest : public CudaOpTest {};

TEST_F(CudaResidualNormTest, MatchesRefOnOddShapesAndEveryWeightDType) {
  const std::optional<DType> wtypes[] = {std::nullopt, DType::kF32, DType::kBF16, DType::kF16};
  uint32_t seed = 1;
  for (int64_t R : {1, 3, 7}) {
    for (int64_t D : {1, 33, 257, 1537, 2049}) {
      for (size_t wi = 0; wi < 4; ++wi) {
        for (bool with_out : {true, false}) {
          const std::optional<DType> wt = wtypes[wi], nt = wtypes[(wi + R) % 4];
          const float scale = (seed % 2) ? 1.0f : 0.6f;
          SCOPED_TRACE(::testing::Message()
                       << "R=" << R << " D=" << D << " w=" << (wt ? DTypeName(*wt) : "none")
                       << " next=" << (nt ? DTypeName(*nt) : "none") << " out=" << with_out
                       << " scale=" << scale);
          seed += 4;
          const std::vector<float> x = RandomFloats(R * D, seed, -3.0f, 3.0f);
          const std::vector<float> h0 = RandomFloats(R * D, seed + 1, -2.0f, 2.0f);
          const StoredTensor w(RandomFloats(D, seed + 2, -0.5f, 2.0f), wt.value_or(DType::kF32),
                               {D}, false);
          const StoredTensor nw(RandomFloats(D, seed + 3, -0.5f, 2.0f), nt.value_or(DType::kF32),
                                {D}, false);
          auto run = [&](ResidualNormFn fn, std::vector<float>& h, std::vector<float>& out) {
            h = h0;
            out.assign(h0.size(), 0.0f);
            ResidualNormArgs a;
            a.x = x.data();
            a.w = wt ? &w.view() : nullptr;
            a.h = h.data();
            a.scale = scale;
            a.next_w = nt ? &nw.view() : nullptr;
            a.out = with_out ? out.data() : nullptr;
            a.R = R, a.D = D, a.eps = 1e-6f;
            fn(pool_, a);
          };
          std::vector<float> h, out, ref_h, ref_out;
          run(ResidualNorm, h, out);
          run(ref::ResidualNorm, ref_h, ref_out);
          EXPECT_LE(MaxRowError(h, ref_h, D, h0, scale), 5e-5);
          if (with_out) {  // against the ref's norm of the kernel's h (a cancelled h's
            // rounding, judged above, is not amplified into the second norm)
            std::vector<float> want(h.size());
            ref::RmsNorm(pool_, h.data(), nt ? nw.view() : TensorView{}, R, D, 1e-6f,
                         want.data());
            EXPECT_LE(MaxRowError(out, want, D), 5e-5);
          }
          ReleaseDeviceMemory();  // w dies here: the next w may reuse its address (kernels.h)
        }
      }
    }
  }
}

}  // namespace
}  // namespace g4::cuda
