// cuda::RmsNorm against ref::RmsNorm: no weight and F32/BF16/F16 weights, odd widths (1 to
// 2049) and row counts, in place. The kernel sums squares in f32 (one partial per thread, then a
// tree): relative error <= ~(D / 256 + 256) * 2^-24 ~ 2e-5 at worst, ~1e-6 typically; the ref
// is f64, so tolerance 3e-5 of |ref| (+1e-6 absolute near 0).
#include <optional>
#include <vector>

#include "kernels/cuda/cuda_test_util.h"
#include "kernels/ref/kernels.h"
#include "kernels/test_util.h"

namespace g4::cuda {
namespace {

using testing::CudaOpTest;
using testing::MaxScaledError;
using g4::testing::RandomFloats;
using g4::testing::StoredTensor;

class CudaRmsNormTest : public CudaOpTest {};

TEST_F(CudaRmsNormTest, MatchesRefOnOddShapesAndEveryWeightDType) {
  const std::optional<DType> wtypes[] = {std::nullopt, DType::kF32, DType::kBF16, DType::kF16};
  uint32_t seed = 1;
  for (int64_t R : {1, 3, 7}) {
    for (int64_t D : {1, 33, 257, 1537, 2049}) {
      for (const auto& wt : wtypes) {
        for (bool in_place : {false, true}) {
          SCOPED_TRACE(::testing::Message() << "R=" << R << " D=" << D << " w="
                                            << (wt ? DTypeName(*wt) : "none")
                                            << " in_place=" << in_place);
          ++seed;
          std::vector<float> x = RandomFloats(R * D, seed, -3.0f, 3.0f);
          const StoredTensor w(RandomFloats(D, seed + 100, -0.5f, 2.0f),
                               wt.value_or(DType::kF32), {D}, /*misalign=*/false);
          const TensorView wv = wt ? w.view() : TensorView{};
          std::vector<float> ref(x.size()), y(x.size());
          ref::RmsNorm(pool_, x.data(), wv, R, D, 1e-6f, ref.data());
          if (in_place) {
            RmsNorm(pool_, x.data(), wv, R, D, 1e-6f, x.data());
            y = x;
          } else {
            RmsNorm(pool_, x.data(), wv, R, D, 1e-6f, y.data());
          }
          EXPECT_LE(MaxScaledError(y, ref, 1e-6 / 3e-5), 3e-5);
          ReleaseDeviceMemory();  // w dies here: the next w may reuse its address (kernels.h)
        }
      }
    }
  }
}

TEST_F(CudaRmsNormTest, UploadsAWeightOnceAndAgainForANewTensorAtTheSameAddress) {
  const int64_t D = 129;
  const StoredTensor w(RandomFloats(D, 5), DType::kBF16, {D}, false);
  std::vector<float> x = RandomFloats(2 * D, 6), y(x.size()), ref(x.size());
  RmsNorm(pool_, x.data(), w.view(), 2, D, 1e-6f, y.data());
  const int64_t bytes = CachedWeightBytes();
  EXPECT_EQ(bytes, D * 2);
  RmsNorm(pool_, x.data(), w.view(), 2, D, 1e-6f, y.data());
  EXPECT_EQ(CachedWeightBytes(), bytes);  // reused, not uploaded again
  // Same address, another dtype and shape: a different tensor, uploaded anew.
  TensorView other = w.view();
  other.dtype = DType::kF16;
  other.shape = {D - 1};
  RmsNorm(pool_, x.data(), other, 2, D - 1, 1e-6f, y.data());
  ref::RmsNorm(pool_, x.data(), other, 2, D - 1, 1e-6f, ref.data());
  y.resize(static_cast<size_t>(2 * (D - 1)));
  ref.resize(y.size());
  EXPECT_LE(MaxScaledError(y, ref, 1e-6 / 3e-5), 3e-5);
  EXPECT_EQ(CachedWeightBytes(), (D - 1) * 2);
}

}  // namespace
}  // namespace g4::cuda
