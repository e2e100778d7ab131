// The Moe cases (kernels/moe_test.h) on the CUDA device: routing, bucketing, expert tiles and the
// combine on the device for float, int4- and int8-group stacks; GGUF-block stacks through the
// host fallback (MoeOnDevice says which).
#include "kernels/moe_test.h"

#include <vector>

#include "kernels/cuda/cuda_test_util.h"
#include "kernels/cuda/staged_ops.h"

namespace g4 {
namespace testing {

INSTANTIATE_TEST_SUITE_P(Cuda, MoeTest, ::testing::ValuesIn(cuda::staged::OpBackends()),
                         OpBackendName);

}  // namespace testing

namespace cuda {
namespace {

using g4::testing::MoeCaseArgs;
using g4::testing::QuantizeStack;
using g4::testing::QuantStack;
using g4::testing::RandomFloats;
using g4::testing::StoredTensor;

class CudaMoeTest : public testing::CudaOpTest {};

TEST_F(CudaMoeTest, GroupAndFloatStacksRunOnTheDeviceGgufOnTheHost) {
  const int64_t E = 6, H = 64, I = 32, R = 3;
  const std::vector<float> logits = RandomFloats(R * E, 3, -3.0f, 3.0f);
  const std::vector<float> x = RandomFloats(R * H, 4, -2.0f, 2.0f);
  const StoredTensor scale(RandomFloats(E, 5, 0.5f, 1.5f), DType::kF32, {E}, false);
  const std::vector<float> gu_f = RandomFloats(E * 2 * I * H, 6, -0.3f, 0.3f);
  const std::vector<float> dn_f = RandomFloats(E * H * I, 7, -0.3f, 0.3f);
  for (QuantKind kind : {QuantKind::kInt4Group, QuantKind::kInt8Group, QuantKind::kQ8_0}) {
    const QuantStack gu = QuantizeStack(gu_f, {E, 2 * I, H}, kind);
    const QuantStack dn = QuantizeStack(dn_f, {E, H, I}, kind);
    EXPECT_EQ(MoeOnDevice(MoeCaseArgs(logits, x, R, 2, gu.view, dn.view, scale.view())),
              kind != QuantKind::kQ8_0)
        << QuantKindName(kind);
  }
  const StoredTensor gu(gu_f, DType::kBF16, {E, 2 * I, H}, false);
  const StoredTensor dn(dn_f, DType::kBF16, {E, H, I}, false);
  EXPECT_TRUE(MoeOnDevice(MoeCaseArgs(logits, x, R, 2, gu.view(), dn.view(), scale.view())));
}

}  // namespace
}  // namespace cuda
}  // namespace g4
