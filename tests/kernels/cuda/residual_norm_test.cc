// cuda::ResidualNorm against ref::ResidualNorm: weights none/F32/BF16/F16 (the two norms in
// different dtypes), odd widths (1 to 2049) and row counts, scale 1 and not, with and without
// the second norm. The kernel sums squares in f32 as cuda::RmsNorm does (rms_norm_test.cc:
// ~2e-5 of |ref| at worst); errors judged per row, on the row's largest |ref| (h may cancel to
// ~0 element-wise), out against the ref's norm of the kernel's h: tolerance 5e-5. With a
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
#include "kernels/ref/kernels.h"
#include "kernels/test_util.h"
#include "ops/quantize.h"

namespace g4::cuda {
namespace {

using g4::testing::MaxRowError;
using g4::testing::RandomFloats;
using g4::testing::StoredTensor;
using testing::CudaOpTest;

class CudaResidualNormTest : public CudaOpTest {};

TEST_F(CudaResidualNormTest, MatchesRefOnOddShapesAndEveryWeightDType) {
  const std::optional<DType> wtypes[] = {std::nullopt, DType::kF32, DType::kBF16, DType::kF16};
  uint32_t seed = 1;
  for (int64_t R : {1, 3, 7}) {
    for (int64_t D : {1, 33, 257, 1537, 2049}) {
      for (size_t wi = 0; wi < 4; ++wi) {
        for (bool with_out : {true, false}) {
          const std::optional<DType> wt = wtypes[wi], nt = wtypes[(wi + R) % 4];
          const float scale = (seed % 2) ? 1.0f : 0.6f;
          SCOPED_TRACE(::testing::Message()
                       << "R=" << R << " D=" << D << " w=" << (wt ? DTypeName(*wt) : "none")
                       << " next=" << (nt ? DTypeName(*nt) : "none") << " out=" << with_out
                       << " scale=" << scale);
          seed += 4;
          std::vector<float> x = RandomFloats(R * D, seed, -3.0f, 3.0f);
          const std::vector<float> h0 = RandomFloats(R * D, seed + 1, -2.0f, 2.0f);
          const StoredTensor w(RandomFloats(D, seed + 2, -0.5f, 2.0f), wt.value_or(DType::kF32),
                               {D}, false);
          const StoredTensor nw(RandomFloats(D, seed + 3, -0.5f, 2.0f), nt.value_or(DType::kF32),
                                {D}, false);
          auto run = [&](ResidualNormFn fn, std::vector<float>& h, std::vector<float>& out) {
            h = h0;
            out.assign(h0.size(), 0.0f);
            ResidualNormArgs a;
            a.x = x.data();
            a.w = wt ? &w.view() : nullptr;
            a.h = h.data();
            a.scale = scale;
            a.next_w = nt ? &nw.view() : nullptr;
            a.out = with_out ? out.data() : nullptr;
            a.R = R, a.D = D, a.eps = 1e-6f;
            fn(pool_, a);
          };
          std::vector<float> h, out, ref_h, ref_out;
          run(staged::Ops().residual_norm, h, out);
          run(ref::ResidualNorm, ref_h, ref_out);
          EXPECT_LE(MaxRowError(h, ref_h, D, h0, scale), 5e-5);
          if (with_out) {  // against the ref's norm of the kernel's h (a cancelled h's
            // rounding, judged above, is not amplified into the second norm)
            std::vector<float> want(h.size());
            ref::RmsNorm(pool_, h.data(), nt ? nw.view() : TensorView{}, R, D, 1e-6f,
                         want.data());
            EXPECT_LE(MaxRowError(out, want, D), 5e-5);
          }
          ReleaseDeviceMemory();  // w dies here: the next w may reuse its address (kernels.h)
        }
      }
    }
  }
}

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
}  // namespace g4::cuda
