// The GroupedMatMul cases (kernels/matmul_group_test.h) on the CUDA device; groups that cannot
// share a launch (another dtype or storage) fall back to one MatMul each, and GemvGroupable's
// decision is host logic, checked without a device.
#include "kernels/matmul_group_test.h"

#include <vector>

#include "kernels/cuda/cuda_test_util.h"
#include "kernels/cuda/matmul.h"
#include "kernels/cuda/staged_ops.h"

namespace g4 {
namespace testing {

INSTANTIATE_TEST_SUITE_P(Cuda, MatMulGroupTest, ::testing::ValuesIn(cuda::staged::OpBackends()),
                         OpBackendName);

}  // namespace testing

namespace cuda {
namespace {

using g4::testing::CheckGroup;
using g4::testing::RandomFloats;
using g4::testing::StoredTensor;
using testing::CudaOpTest;

class CudaMatMulGroupTest : public CudaOpTest {};

TEST_F(CudaMatMulGroupTest, GroupsThatCannotShareALaunchFallBack) {
  const StoredTensor a(RandomFloats(12 * 32, 1), DType::kBF16, {12, 32}, false);
  const StoredTensor other_dtype(RandomFloats(5 * 32, 3), DType::kF16, {5, 32}, false);
  auto q = QuantizeWeight(pool_, a.view(), QuantKind::kInt4Group, 32, DType::kBF16);
  ASSERT_TRUE(q.ok());
  CheckGroup(staged::Ops().grouped_matmul, pool_, {&a.view(), &other_dtype.view()}, 2, 10);
  CheckGroup(staged::Ops().grouped_matmul, pool_, {&a.view(), &q->view}, 1, 11);
}

// Host logic: which device weights share one grouped GEMV launch.
TEST(GemvGroupableTest, SameKAndStorageAtDecodeRowsOnly) {
  std::vector<uint8_t> bytes(4096);
  const TensorView a(bytes.data(), DType::kBF16, {12, 32});
  const TensorView b(bytes.data(), DType::kBF16, {7, 32});
  const TensorView other_k(bytes.data(), DType::kBF16, {7, 48});
  const TensorView other_dtype(bytes.data(), DType::kF16, {7, 32});
  const TensorView* same[] = {&a, &b, &a};
  EXPECT_TRUE(GemvGroupable(same, 3, 1));
  EXPECT_TRUE(GemvGroupable(same, 3, kGemvMaxT));
  EXPECT_FALSE(GemvGroupable(same, 3, kGemvMaxT + 1));
  EXPECT_FALSE(GemvGroupable(same, kMaxMatMulGroup + 1, 1));
  const TensorView* k_differs[] = {&a, &other_k};
  EXPECT_FALSE(GemvGroupable(k_differs, 2, 1));
  const TensorView* dtype_differs[] = {&a, &other_dtype};
  EXPECT_FALSE(GemvGroupable(dtype_differs, 2, 1));
  TensorView q4 = a;
  q4.dtype = DType::kU8;
  q4.quant.kind = QuantKind::kInt4Group;
  q4.quant.group_size = 32;
  q4.quant.row_bytes = 16;
  q4.quant.scale_dtype = DType::kBF16;
  TensorView q4_other_group = q4;
  q4_other_group.quant.group_size = 16;
  const TensorView* int4[] = {&q4, &q4};
  EXPECT_TRUE(GemvGroupable(int4, 2, 1));
  const TensorView* mixed[] = {&a, &q4};
  EXPECT_FALSE(GemvGroupable(mixed, 2, 1));
  const TensorView* groups_differ[] = {&q4, &q4_other_group};
  EXPECT_FALSE(GemvGroupable(groups_differ, 2, 1));
}

}  // namespace
}  // namespace cuda
}  // namespace g4
