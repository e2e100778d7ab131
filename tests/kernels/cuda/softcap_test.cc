// cuda::Softcap against ref::Softcap (f64): odd n, the final-logit cap 30 and a small cap,
// inputs far beyond the cap (saturation). f32 tanhf: tolerance 1e-5 of |ref| + 1e-6 absolute.
#include <vector>

#include "kernels/cuda/cuda_test_util.h"
#include "kernels/ref/kernels.h"
#include "kernels/test_util.h"

namespace g4::cuda {
namespace {

using testing::CudaOpTest;
using testing::MaxScaledError;
using g4::testing::RandomFloats;

class CudaSoftcapTest : public CudaOpTest {};

TEST_F(CudaSoftcapTest, MatchesRefOnOddSizes) {
  uint32_t seed = 30;
  for (float cap : {30.0f, 0.5f}) {
    for (int64_t n : {1, 31, 262147}) {
      SCOPED_TRACE(::testing::Message() << "cap=" << cap << " n=" << n);
      std::vector<float> x = RandomFloats(n, ++seed, -200.0f, 200.0f);
      std::vector<float> ref = x;
      ref::Softcap(pool_, ref.data(), n, cap);
      Softcap(pool_, x.data(), n, cap);
      EXPECT_LE(MaxScaledError(x, ref, 0.1), 1e-5);
    }
  }
}

}  // namespace
}  // namespace g4::cuda
