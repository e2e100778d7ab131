// The RmsNorm cases (kernels/rms_norm_test.h) on the CUDA device, and its weight cache: a norm
// weight is uploaded once, and again for a new tensor at the same address.
#include "kernels/rms_norm_test.h"

#include <vector>

#include "kernels/cuda/cuda_test_util.h"
#include "kernels/cuda/staged_ops.h"

namespace g4 {
namespace testing {

INSTANTIATE_TEST_SUITE_P(Cuda, RmsNormTest, ::testing::ValuesIn(cuda::staged::OpBackends()),
                         OpBackendName);

}  // namespace testing

namespace cuda {
namespace {

using testing::CudaOpTest;
using testing::MaxScaledError;
using g4::testing::RandomFloats;
using g4::testing::StoredTensor;

class CudaRmsNormTest : public CudaOpTest {};

TEST_F(CudaRmsNormTest, UploadsAWeightOnceAndAgainForANewTensorAtTheSameAddress) {
  const int64_t D = 129;
  const StoredTensor w(RandomFloats(D, 5), DType::kBF16, {D}, false);
  std::vector<float> x = RandomFloats(2 * D, 6), y(x.size()), ref(x.size());
  staged::Ops().rms_norm(pool_, x.data(), w.view(), 2, D, 1e-6f, y.data());
  const int64_t bytes = CachedWeightBytes();
  EXPECT_EQ(bytes, D * 2);
  staged::Ops().rms_norm(pool_, x.data(), w.view(), 2, D, 1e-6f, y.data());
  EXPECT_EQ(CachedWeightBytes(), bytes);  // reused, not uploaded again
  // Same address, another dtype and shape: a different tensor, uploaded anew.
  TensorView other = w.view();
  other.dtype = DType::kF16;
  other.shape = {D - 1};
  staged::Ops().rms_norm(pool_, x.data(), other, 2, D - 1, 1e-6f, y.data());
  ref::RmsNorm(pool_, x.data(), other, 2, D - 1, 1e-6f, ref.data());
  y.resize(static_cast<size_t>(2 * (D - 1)));
  ref.resize(y.size());
  EXPECT_LE(MaxScaledError(y, ref, 1e-6 / 3e-5), 3e-5);
  EXPECT_EQ(CachedWeightBytes(), (D - 1) * 2);
}

}  // namespace
}  // namespace cuda
}  // namespace g4
