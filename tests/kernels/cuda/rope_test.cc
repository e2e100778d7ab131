// cuda::Rope against ref::Rope: both Gemma 4 RoPEs (the default one, and the proportional one
// whose inv_freq has zeros for the unrotated pairs), odd T and H, head dims 2 to 512, positions
// up to 131071. Angles and their sine / cosine are f64 as in the ref and the rotation is f64
// rounded once, so the only differences are last-bit ones of sincos: tolerance 1e-6 of max|x|.
#include <cmath>
#include <random>
#include <vector>

#include "kernels/cuda/cuda_test_util.h"
#include "kernels/cuda/staged_ops.h"
#include "kernels/ref/kernels.h"
#include "kernels/test_util.h"

namespace g4::cuda {
namespace {

using testing::CudaOpTest;
using g4::testing::InvFreq;
using g4::testing::RandomFloats;

class CudaRopeTest : public CudaOpTest {};

TEST_F(CudaRopeTest, MatchesRefForDefaultAndProportionalRope) {
  std::mt19937 rng(7);
  uint32_t seed = 10;
  for (int64_t T : {1, 5, 37}) {
    for (int64_t H : {1, 3, 8}) {
      for (int64_t D : {2, 10, 256, 512}) {
        for (bool proportional : {false, true}) {
          SCOPED_TRACE(::testing::Message() << "T=" << T << " H=" << H << " D=" << D
                                            << " proportional=" << proportional);
          const std::vector<float> inv =
              proportional ? InvFreq(D, 1e6, D / 8) : InvFreq(D, 1e4, D / 2);
          std::vector<int32_t> pos(static_cast<size_t>(T));
          std::uniform_int_distribution<int32_t> pd(0, 131071);
          for (auto& p : pos) p = pd(rng);
          pos[0] = 0;
          std::vector<float> x = RandomFloats(T * H * D, ++seed, -2.0f, 2.0f);
          std::vector<float> ref = x;
          ref::Rope(pool_, ref.data(), pos.data(), T, H, D, inv.data());
          staged::Ops().rope(pool_, x.data(), pos.data(), T, H, D, inv.data());
          double worst = 0.0;
          for (size_t i = 0; i < x.size(); ++i) {
            const double e = std::fabs(static_cast<double>(x[i]) - ref[i]);
            if (!(e <= worst)) worst = std::isnan(e) ? INFINITY : e;
          }
          EXPECT_LE(worst, 2e-6);  // 1e-6 of max|x| = 2
          if (proportional) {
            // Pairs with inv_freq 0 pass through unchanged (bit for bit).
            const std::vector<float> orig = RandomFloats(T * H * D, seed, -2.0f, 2.0f);
            const int64_t j = D / 2 - 1;
            EXPECT_EQ(x[static_cast<size_t>(j)], orig[static_cast<size_t>(j)]);
            EXPECT_EQ(x[static_cast<size_t>(D - 1)], orig[static_cast<size_t>(D - 1)]);
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace g4::cuda
