// The MatMul (float and quantized weights) and Attention cases (kernels/matmul_test.h,
// matmul_quant_test.h, attention_test.h) on the CUDA device through its host-pointer adapter
// (staged_ops.h); cuda/matmul_test.cc, matmul_quant_test.cc and attention_test.cc are the
// device-pointer kernels' own tests, which emu/run.sh builds alone. And the adapter's MatMul: F32/BF16/F16 and int4-group weights uploaded once (converted
// to the compute dtype), an int8 weight sent to the CPU kernel (the dev op's host fallback).
// Matmul tolerance: 1e-5 of sum_k |x_k w_nk| (f32 accumulation vs f64).
#include <cmath>
#include <vector>

#include "kernels/cuda/cuda_test_util.h"
#include "kernels/attention_test.h"
#include "kernels/cuda/staged_ops.h"
#include "kernels/matmul_quant_test.h"
#include "kernels/matmul_test.h"
#include "kernels/ref/kernels.h"
#include "kernels/test_util.h"
#include "ops/quantize.h"

namespace g4 {
namespace testing {

INSTANTIATE_TEST_SUITE_P(Cuda, MatMulTest, ::testing::ValuesIn(cuda::staged::OpBackends()),
                         OpBackendName);
INSTANTIATE_TEST_SUITE_P(Cuda, QuantMatMulTest, ::testing::ValuesIn(cuda::staged::OpBackends()),
                         OpBackendName);
INSTANTIATE_TEST_SUITE_P(Cuda, AttentionTest, ::testing::ValuesIn(cuda::staged::OpBackends()),
                         OpBackendName);

}  // namespace testing

namespace cuda {
namespace {

using testing::CudaOpTest;
using testing::MatMulError;
using g4::testing::RandomFloats;
using g4::testing::StoredTensor;

class CudaStagedOpsTest : public CudaOpTest {};

TEST_F(CudaStagedOpsTest, MatMulFloatWeightsMatchRefAndUploadOnce) {
  uint32_t seed = 80;
  for (DType dt : g4::testing::kFloatDTypes) {
    for (int64_t T : {1, 3, 13}) {
      SCOPED_TRACE(::testing::Message() << DTypeName(dt) << " T=" << T);
      const int64_t N = 67, K = 96;
      const StoredTensor w(RandomFloats(N * K, ++seed), dt, {N, K}, false);
      const std::vector<float> x = RandomFloats(T * K, ++seed);
      std::vector<float> y(static_cast<size_t>(T * N)), ref(y.size());
      ref::MatMul(pool_, w.view(), x.data(), T, ref.data());
      staged::Ops().matmul(pool_, w.view(), x.data(), T, y.data());
      EXPECT_LE(MatMulError(w.view(), x, T, y, ref), 1e-5);
      // Uploaded in the compute dtype: 16-bit weights as 2 bytes, f32 as 4.
      EXPECT_EQ(CachedWeightBytes(), N * K * static_cast<int64_t>(DTypeSize(dt)));
      staged::Ops().matmul(pool_, w.view(), x.data(), T, y.data());
      EXPECT_EQ(CachedWeightBytes(), N * K * static_cast<int64_t>(DTypeSize(dt)));
      ReleaseDeviceMemory();
    }
  }
}

TEST_F(CudaStagedOpsTest, MatMulInt4OnDeviceInt8OnTheHost) {
  const int64_t N = 37, K = 96;
  const StoredTensor f(RandomFloats(N * K, 90), DType::kF32, {N, K}, false);
  for (QuantKind kind : {QuantKind::kInt4Group, QuantKind::kInt8Group}) {
    auto q = QuantizeWeight(pool_, f.view(), kind, 32, DType::kBF16);
    ASSERT_TRUE(q.ok()) << q.status().ToString();
    EXPECT_EQ(MatMulOnDevice(q->view), kind == QuantKind::kInt4Group);
    for (int64_t T : {1, 9}) {
      SCOPED_TRACE(::testing::Message() << QuantKindName(kind) << " T=" << T);
      const std::vector<float> x = RandomFloats(T * K, 91 + static_cast<uint32_t>(T));
      std::vector<float> y(static_cast<size_t>(T * N)), ref(y.size());
      ref::MatMul(pool_, q->view, x.data(), T, ref.data());
      staged::Ops().matmul(pool_, q->view, x.data(), T, y.data());
      EXPECT_LE(MatMulError(q->view, x, T, y, ref), 1e-5);
    }
    EXPECT_EQ(CachedWeightBytes() > 0, kind == QuantKind::kInt4Group);
    ReleaseDeviceMemory();
  }
}

}  // namespace
}  // namespace cuda
}  // namespace g4
