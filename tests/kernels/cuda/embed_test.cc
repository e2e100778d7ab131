// The Embed cases (kernels/embed_test.h) on the CUDA device, which gathers float tables on the
// device and quantized ones on the host (the CPU kernel), caching nothing for them.
#include "kernels/embed_test.h"

#include <vector>

#include "kernels/cuda/cuda_test_util.h"
#include "kernels/cuda/staged_ops.h"
#include "ops/quantize.h"

namespace g4 {
namespace testing {

INSTANTIATE_TEST_SUITE_P(Cuda, EmbedTest, ::testing::ValuesIn(cuda::staged::OpBackends()),
                         OpBackendName);

}  // namespace testing

namespace cuda {
namespace {

using testing::CudaOpTest;
using g4::testing::RandomFloats;
using g4::testing::StoredTensor;

class CudaEmbedTest : public CudaOpTest {};

TEST_F(CudaEmbedTest, FloatTablesAreGatheredOnTheDevice) {
  const StoredTensor table(RandomFloats(37 * 65, 60), DType::kBF16, {37, 65}, false);
  EXPECT_TRUE(EmbedOnDevice(table.view()));
}

TEST_F(CudaEmbedTest, QuantizedTableIsGatheredOnTheHost) {
  const int64_t V = 11, D = 64;
  const std::vector<float> w = RandomFloats(V * D, 70);
  const StoredTensor f(w, DType::kF32, {V, D}, false);
  auto q = QuantizeWeight(pool_, f.view(), QuantKind::kInt8Group, D, DType::kF32);
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_FALSE(EmbedOnDevice(q->view));
  const std::vector<int32_t> ids = {3, 0, 10, 3};
  std::vector<float> ref(4 * D), out(ref.size());
  ref::Embed(pool_, q->view, ids.data(), 4, 2.0f, ref.data());
  staged::Ops().embed(pool_, q->view, ids.data(), 4, 2.0f, out.data());
  EXPECT_EQ(out, ref);
  EXPECT_EQ(CachedWeightBytes(), 0);
}

}  // namespace
}  // namespace cuda
}  // namespace g4
