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

using g4::testing::RandomFloats;
using g4::testing::StoredTensor;
using testing::CudaOpTest;

class CudaNormRopeTest : public CudaOpTest {};

// theta^(-2j/D) for the first `rotated` pairs, 0 after (proportional RoPE's pass-through).
std::vector<float> InvFreq(int64_t D, double theta, int64_t rotated) {
  std::vector<float> f(static_cast<size_t>(D / 2), 0.0f);
  for (int64_t j = 0; j < rotated && j < D / 2; ++j) {
    f[static_cast<size_t>(j)] = static_cast<float>(std::pow(theta, -2.0 * j / D));
  }
  return f;
}

// max over heads of max_d |y - ref| / max_d |ref|; NaN gives infinity.
double MaxHeadError(const std::vector<float>& y, const std::vector<float>& ref, int64_t D) {
  double worst = 0.0;
  for (size_t r0 = 0; r0 < ref.size(); r0 += static_cast<size_t>(D)) {
    double scale = 0.0, err = 0.0;
    for (size_t i = r0; i < r0 + static_cast<size_t>(D); ++i) {
      scale = std::max(scale, std::fabs(static_cast<double>(ref[i])));
      const double e = std::fabs(static_cast<double>(y[i]) - ref[i]);
      err = std::isnan(e) ? INFINITY : std::max(err, e);
    }
    worst = std::max(worst, scale > 0 ? err / scale : err);
  }
  return worst;
}

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
          EXPECT_LE(MaxHeadError(x, ref, D), 3e-5);
          ReleaseDeviceMemory();  // w dies here: the next w may reuse its address (kernels.h)
        }
      }
    }
  }
}

}  // namespace
}  // namespace g4::cuda
