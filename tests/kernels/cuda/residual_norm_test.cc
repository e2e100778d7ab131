// The ResidualNorm cases (kernels/residual_norm_test.h) on the CUDA device. With a
// projection (the sub-block's output matmul in front): dense F32/BF16/F16 and int4 weights at
// decode rows (the GEMV grid whose last block runs the norm: GemvResidual) and beyond (MatMul,
// then the norm kernel), bit for bit what MatMul then ResidualNorm give on the device, and x,
// h and out against the ref op.
#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "kernels/cuda/cuda_test_util.h"
#include "kernels/cuda/staged_ops.h"
#include "kernels/residual_norm_test.h"
#include "kernels/ref/kernels.h"
#include "kernels/test_util.h"
#include "ops/quantize.h"

namespace g4 {
namespace testing {

INSTANTIATE_TEST_SUITE_P(Cuda, ResidualNormTest, ::testing::ValuesIn(cuda::staged::OpBackends()),
                         OpBackendName);

}  // namespace testing

namespace cuda {
namespace {

using g4::testing::MaxRowError;
using g4::testing::RandomFloats;
using g4::testing::StoredTensor;
using testing::CudaOpTest;

class CudaResidualNormTest : public CudaOpTest {};

// One projection case: y = in @ w^T then the norm, as one op (fused at decode rows) and as the
// device MatMul then the device ResidualNorm.
void CheckProjection(ThreadPool& pool, const TensorView& w, int64_t R, bool with_out,
                     uint32_t seed) {
  const int64_t D = w.dim(0), K = w.dim(1);
  const std::vector<float> in = RandomFloats(R * K, seed, -1.0f, 1.0f);
  const std::vector<float> h0 = RandomFloats(R * D, seed + 1, -2.0f, 2.0f);
  const StoredTensor nw(RandomFloats(D, seed + 2, -0.5f, 2.0f), DType::kBF16, {D}, false);
  const StoredTensor pw(RandomFloats(D, seed + 3, -0.5f, 2.0f), DType::kF32, {D}, false);
  struct Run {
    std::vector<float> x, h, out;
  };
  auto args = [&](Run& r) {
    r.x.assign(static_cast<size_t>(R * D), -7.0f);
    r.h = h0;
    r.out.assign(h0.size(), -7.0f);
    ResidualNormArgs a;
    a.x = r.x.data();
    a.w = &pw.view();
    a.h = r.h.data();
    a.scale = 0.7f;
    a.next_w = &nw.view();
    a.out = with_out ? r.out.data() : nullptr;
    a.R = R, a.D = D, a.eps = 1e-6f;
    a.proj = &w;
    a.proj_in = in.data();
    return a;
  };
  Run fused, parts, ref;
  staged::Ops().residual_norm(pool, args(fused));
  ResidualNormArgs p = args(parts);
  staged::Ops().matmul(pool, w, in.data(), R, p.x);
  p.proj = nullptr;
  staged::Ops().residual_norm(pool, p);
  ref::ResidualNorm(pool, args(ref));
  EXPECT_EQ(fused.x, parts.x);
  EXPECT_EQ(fused.h, parts.h);
  if (with_out) {
    EXPECT_EQ(fused.out, parts.out);
  }
  EXPECT_LE(testing::MatMulError(w, in, R, fused.x, ref.x), 1e-5);
  Run check;  // the ref norm of the device's own x: the norm's error alone
  ResidualNormArgs c = args(check);
  std::copy(fused.x.begin(), fused.x.end(), check.x.begin());
  c.proj = nullptr;
  ref::ResidualNorm(pool, c);
  EXPECT_LE(MaxRowError(fused.h, check.h, D, h0, 0.7f), 5e-5);
  if (with_out) {
    EXPECT_LE(MaxRowError(fused.out, check.out, D), 5e-5);
  }
  ReleaseDeviceMemory();  // nw, pw die here: the next ones may reuse their addresses (kernels.h)
}

TEST_F(CudaResidualNormTest, ProjectionIsMatMulThenTheNorm) {
  uint32_t seed = 900;
  for (DType dt : g4::testing::kFloatDTypes) {
    for (int64_t K : {64, 45}) {  // 45: the GEMV's scalar path
      const StoredTensor w(RandomFloats(257 * K, ++seed), dt, {257, K}, false);
      for (int64_t R : {1, 3, 8, 9}) {  // 9: the GEMM, then the norm kernel
        SCOPED_TRACE(::testing::Message() << DTypeName(dt) << " K=" << K << " R=" << R);
        CheckProjection(pool_, w.view(), R, R != 3, seed += 4);
      }
    }
  }
  const int64_t K = 128;
  const StoredTensor wf(RandomFloats(300 * K, ++seed), DType::kF32, {300, K}, false);
  auto wq = QuantizeWeight(pool_, wf.view(), QuantKind::kInt4Group, 32, DType::kBF16);
  ASSERT_TRUE(wq.ok());
  for (int64_t R : {1, 4, 5}) {  // 5: past one int4 GEMV launch, MatMul then the kernel
    SCOPED_TRACE(::testing::Message() << "int4 R=" << R);
    CheckProjection(pool_, wq->view, R, true, seed += 4);
  }
}

}  // namespace
}  // namespace cuda
}  // namespace g4
