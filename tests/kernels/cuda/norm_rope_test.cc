// cuda::NormRope against ref::NormRope (ref::RmsNorm per head, then ref::Rope): weights
// none/F32/BF16/F16, the default and the proportional RoPE (zeros in inv_freq), no rotation
// (inv_freq null), odd T and H, head dims 1 to 512 (odd ones keep their last element
// unrotated), positions up to 131071. The norm's f32 sum of squares is cuda::RmsNorm's (~2e-5
// of |x| at worst, rms_norm_test.cc) and the rotation is f64 as in the ref: tolerance 3e-5 of
// the head's largest |ref|.
#include <algorithm>
#include <cmath>
#include <optional>
#include <random>
#include <vector>

#include "kernels/cuda/cuda_test_util.h"
#include "kernels/ref/kernels.h"
#include "kernels/test_util.h"

namespace g4::cuda {
namespace {

using g4::testing::InvFreq;
using g4::testing::MaxRowError;
using g4::testing::RandomFloats;
using g4::testing::StoredTensor;
using testing::CudaOpTest;

class CudaNormRopeTest : public CudaOpTest {};

TEST_F(CudaNormRopeTest, MatchesRefForEveryWeightDTypeAndRope) {
  const std::optional<DType> wtypes[] = {std::nullopt, DType::kF32, DType::kBF16, DType::kF16};
  std::mt19937 rng(7);
  uint32_t seed = 10;
  for (int64_t T : {1, 5}) {
    for (int64_t H : {1, 3, 8}) {
      for (int64_t D : {1, 2, 33, 256, 512}) {
        for (int rope = 0; rope < 3; ++rope) {  // none, default, proportional
          const std::optional<DType> wt = wtypes[(seed / 3) % 4];
          SCOPED_TRACE(::testing::Message() << "T=" << T << " H=" << H << " D=" << D
                                            << " rope=" << rope
                                            << " w=" << (wt ? DTypeName(*wt) : "none"));
          const std::vector<float> inv = rope == 2 ? InvFreq(D, 1e6, D / 8)
                                                   : InvFreq(D, 1e4, D / 2);
          const float* inv_freq = rope == 0 ? nullptr : inv.data();
          std::vector<int32_t> pos(static_cast<size_t>(T));
          std::uniform_int_distribution<int32_t> pd(0, 131071);
          for (auto& p : pos) p = pd(rng);
          const StoredTensor w(RandomFloats(D, ++seed, -0.5f, 2.0f), wt.value_or(DType::kF32),
                               {D}, false);
          const TensorView wv = wt ? w.view() : TensorView{};
          std::vector<float> x = RandomFloats(T * H * D, ++seed, -3.0f, 3.0f), ref = x;
          ref::NormRope(pool_, ref.data(), wv, pos.data(), T, H, D, 1e-6f, inv_freq);
          NormRope(pool_, x.data(), wv, pos.data(), T, H, D, 1e-6f, inv_freq);
          EXPECT_LE(MaxRowError(x, ref, D), 3e-5);
          ReleaseDeviceMemory();  // w dies here: the next w may reuse its address (kernels.h)
        }
      }
    }
  }
}

}  // namespace
}  // namespace g4::cuda
