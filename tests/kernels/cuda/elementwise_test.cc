// cuda::Add and cuda::Scale against the ref kernels: one f32 rounding each, as in the ref, so
// the results are bit-identical. Odd sizes, out aliasing a or b.
#include <vector>

#include "kernels/cuda/cuda_test_util.h"
#include "kernels/ref/kernels.h"
#include "kernels/test_util.h"

namespace g4::cuda {
namespace {

using testing::CudaOpTest;
using g4::testing::RandomFloats;

class CudaElementwiseTest : public CudaOpTest {};

TEST_F(CudaElementwiseTest, AddMatchesRefExactlyIncludingAliasing) {
  uint32_t seed = 40;
  for (int64_t n : {1, 3, 1537, 65537}) {
    for (int alias = 0; alias < 3; ++alias) {
      SCOPED_TRACE(::testing::Message() << "n=" << n << " alias=" << alias);
      std::vector<float> a = RandomFloats(n, ++seed, -5.0f, 5.0f);
      std::vector<float> b = RandomFloats(n, ++seed, -5.0f, 5.0f);
      std::vector<float> ref(a.size()), out(a.size());
      ref::Add(pool_, a.data(), b.data(), n, ref.data());
      float* dst = alias == 0 ? out.data() : alias == 1 ? a.data() : b.data();
      Add(pool_, a.data(), b.data(), n, dst);
      EXPECT_EQ(std::vector<float>(dst, dst + n), ref);
    }
  }
}

TEST_F(CudaElementwiseTest, ScaleMatchesRefExactly) {
  uint32_t seed = 50;
  for (int64_t n : {1, 5, 2049, 100001}) {
    SCOPED_TRACE(n);
    std::vector<float> x = RandomFloats(n, ++seed, -5.0f, 5.0f);
    std::vector<float> ref = x;
    ref::Scale(pool_, ref.data(), n, 0.37f);
    Scale(pool_, x.data(), n, 0.37f);
    EXPECT_EQ(x, ref);
  }
}

}  // namespace
}  // namespace g4::cuda
