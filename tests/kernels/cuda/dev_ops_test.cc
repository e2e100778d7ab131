// The device-resident ops (cuda::dev, kernels.h) on DeviceMemory buffers against the ref kernels
// on host copies, random inputs of odd sizes: MatMul (float weights, int4 on the device, int8 on
// the host fallback), RmsNorm / Softcap / Scale / GeluMul / Add in place and not, Rope with
// device positions and inv_freq, Embed with device ids (and a quantized table gathered on the
// host), Attention at head dims 256 and 512 on the device and 16 on the host fallback. Nothing
// is synchronized between ops: the results are read back by DeviceMemory().Download, which
// waits for them. Tolerances are those of the per-op staged tests (see there for why).
#include <cmath>
#include <random>
#include <vector>

#include "kernels/cuda/cuda_test_util.h"
#include "kernels/cuda/device_buffers.h"
#include "kernels/ref/kernels.h"
#include "kernels/test_util.h"
#include "ops/quantize.h"

namespace g4::cuda {
namespace {

using testing::CudaOpTest;
using testing::MatMulError;
using testing::DeviceOf;
using testing::MaxScaledError;
using testing::OnDevice;
using testing::ToHostVector;
using g4::testing::RandomFloats;
using g4::testing::StoredTensor;

class CudaDevOpsTest : public CudaOpTest {};

double MaxAbsError(const std::vector<float>& y, const std::vector<float>& ref) {
  EXPECT_EQ(y.size(), ref.size());
  double worst = 0.0;
  for (size_t i = 0; i < y.size() && i < ref.size(); ++i) {
    const double e = std::fabs(static_cast<double>(y[i]) - ref[i]);
    if (!(e <= worst)) worst = std::isnan(e) ? INFINITY : e;
  }
  return worst;
}

// y = x @ w^T through cuda::dev on device x / y, read back.
std::vector<float> DevMatMul(ThreadPool& pool, const TensorView& w, const std::vector<float>& x,
                             int64_t T) {
  Buffer<float> dx = OnDevice(x), dy = DeviceOf<float>(static_cast<size_t>(T * w.dim(0)));
  dev::MatMul(pool, w, dx.data(), T, dy.data());
  return ToHostVector(dy);
}

TEST_F(CudaDevOpsTest, MatMulFloatWeights) {
  uint32_t seed = 200;
  for (DType dt : g4::testing::kFloatDTypes) {
    for (int64_t T : {1, 5, 13}) {
      SCOPED_TRACE(::testing::Message() << DTypeName(dt) << " T=" << T);
      const int64_t N = 37, K = 67;
      const StoredTensor w(RandomFloats(N * K, ++seed), dt, {N, K}, false);
      const std::vector<float> x = RandomFloats(T * K, ++seed);
      std::vector<float> ref(static_cast<size_t>(T * N));
      ref::MatMul(pool_, w.view(), x.data(), T, ref.data());
      EXPECT_LE(MatMulError(w.view(), x, T, DevMatMul(pool_, w.view(), x, T), ref), 1e-5);
      ReleaseDeviceMemory();  // w dies here (kernels.h)
    }
  }
}

TEST_F(CudaDevOpsTest, MatMulInt4OnTheDeviceInt8OnTheHostFallback) {
  const int64_t N = 29, K = 96;
  const StoredTensor f(RandomFloats(N * K, 210), DType::kF32, {N, K}, false);
  for (QuantKind kind : {QuantKind::kInt4Group, QuantKind::kInt8Group}) {
    auto q = QuantizeWeight(pool_, f.view(), kind, 32, DType::kBF16);
    ASSERT_TRUE(q.ok()) << q.status().ToString();
    for (int64_t T : {1, 11}) {
      SCOPED_TRACE(::testing::Message() << QuantKindName(kind) << " T=" << T);
      const std::vector<float> x = RandomFloats(T * K, 211 + static_cast<uint32_t>(T));
      std::vector<float> ref(static_cast<size_t>(T * N));
      ref::MatMul(pool_, q->view, x.data(), T, ref.data());
      EXPECT_LE(MatMulError(q->view, x, T, DevMatMul(pool_, q->view, x, T), ref), 1e-5);
    }
    // The int8 weight never reached the device.
    EXPECT_EQ(CachedWeightBytes() > 0, kind == QuantKind::kInt4Group);
    ReleaseDeviceMemory();
  }
}

TEST_F(CudaDevOpsTest, RmsNormInPlaceAndNot) {
  uint32_t seed = 220;
  for (int64_t D : {1, 257, 1537}) {
    for (bool in_place : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "D=" << D << " in_place=" << in_place);
      const int64_t R = 3;
      const std::vector<float> x = RandomFloats(R * D, ++seed, -3.0f, 3.0f);
      const StoredTensor w(RandomFloats(D, ++seed, -0.5f, 2.0f), DType::kBF16, {D}, false);
      std::vector<float> ref(x.size());
      ref::RmsNorm(pool_, x.data(), w.view(), R, D, 1e-6f, ref.data());
      Buffer<float> dx = OnDevice(x), dy = DeviceOf<float>(x.size());
      float* out = in_place ? dx.data() : dy.data();
      dev::RmsNorm(pool_, dx.data(), w.view(), R, D, 1e-6f, out);
      EXPECT_LE(MaxScaledError(ToHostVector(in_place ? dx : dy), ref, 1e-6 / 3e-5), 3e-5);
      if (!in_place) {
        EXPECT_EQ(ToHostVector(dx), x);  // the input is left alone
      }
      ReleaseDeviceMemory();
    }
  }
}

TEST_F(CudaDevOpsTest, RopeWithDevicePositionsAndInvFreq) {
  std::mt19937 rng(230);
  uint32_t seed = 230;
  for (int64_t D : {10, 256}) {
    const int64_t T = 5, H = 3;
    SCOPED_TRACE(::testing::Message() << "D=" << D);
    std::vector<float> inv(static_cast<size_t>(D / 2));
    for (size_t j = 0; j < inv.size(); ++j) {
      inv[j] = static_cast<float>(std::pow(1e4, -2.0 * static_cast<double>(j) / D));
    }
    std::vector<int32_t> pos(static_cast<size_t>(T));
    std::uniform_int_distribution<int32_t> pd(0, 131071);
    for (auto& p : pos) p = pd(rng);
    const std::vector<float> x = RandomFloats(T * H * D, ++seed, -2.0f, 2.0f);
    std::vector<float> ref = x;
    ref::Rope(pool_, ref.data(), pos.data(), T, H, D, inv.data());
    Buffer<float> dx = OnDevice(x), dinv = OnDevice(inv);
    Buffer<int32_t> dpos = OnDevice(pos);
    dev::Rope(pool_, dx.data(), dpos.data(), T, H, D, dinv.data());
    EXPECT_LE(MaxAbsError(ToHostVector(dx), ref), 2e-6);  // 1e-6 of max|x| = 2
  }
}

TEST_F(CudaDevOpsTest, ElementwiseOpsInPlaceAndNot) {
  uint32_t seed = 240;
  for (int64_t n : {1, 7, 4099}) {
    SCOPED_TRACE(::testing::Message() << "n=" << n);
    const std::vector<float> a = RandomFloats(n, ++seed, -8.0f, 8.0f);
    const std::vector<float> b = RandomFloats(n, ++seed, -3.0f, 3.0f);
    for (int alias = 0; alias < 3; ++alias) {  // 0: separate out, 1: out = a, 2: out = b
      SCOPED_TRACE(::testing::Message() << "alias=" << alias);
      Buffer<float> da = OnDevice(a), db = OnDevice(b), dout = DeviceOf<float>(a.size());
      Buffer<float>& dst = alias == 0 ? dout : alias == 1 ? da : db;
      std::vector<float> ref(a.size());
      ref::GeluMul(pool_, a.data(), b.data(), 1, n, n, ref.data());
      dev::GeluMul(pool_, da.data(), db.data(), 1, n, n, dst.data());
      EXPECT_LE(MaxScaledError(ToHostVector(dst), ref, 0.1), 1e-5);
      Buffer<float> ea = OnDevice(a), eb = OnDevice(b), eout = DeviceOf<float>(a.size());
      Buffer<float>& edst = alias == 0 ? eout : alias == 1 ? ea : eb;
      ref::Add(pool_, a.data(), b.data(), n, ref.data());
      dev::Add(pool_, ea.data(), eb.data(), n, edst.data());
      EXPECT_EQ(ToHostVector(edst), ref);
    }
    // In place by definition.
    std::vector<float> ref = a;
    Buffer<float> dx = OnDevice(a);
    ref::Softcap(pool_, ref.data(), n, 3.0f);
    dev::Softcap(pool_, dx.data(), n, 3.0f);
    EXPECT_LE(MaxScaledError(ToHostVector(dx), ref, 0.1), 1e-5);
    ref = a;
    Buffer<float> sx = OnDevice(a);
    ref::Scale(pool_, ref.data(), n, -0.37f);
    dev::Scale(pool_, sx.data(), n, -0.37f);
    EXPECT_EQ(ToHostVector(sx), ref);
  }
}

TEST_F(CudaDevOpsTest, EmbedWithDeviceIdsOnTheDeviceAndOnTheHost) {
  const int64_t V = 23, D = 65, T = 6;
  const std::vector<int32_t> ids = {4, 0, 22, 4, 17, 9};
  Buffer<int32_t> dids = OnDevice(ids);
  uint32_t seed = 250;
  for (DType dt : {DType::kF32, DType::kBF16}) {
    SCOPED_TRACE(DTypeName(dt));
    const StoredTensor table(RandomFloats(V * D, ++seed), dt, {V, D}, false);
    ASSERT_TRUE(EmbedOnDevice(table.view()));
    std::vector<float> ref(static_cast<size_t>(T * D));
    ref::Embed(pool_, table.view(), ids.data(), T, 8.0f, ref.data());
    Buffer<float> out = DeviceOf<float>(ref.size());
    dev::Embed(pool_, table.view(), dids.data(), T, 8.0f, out.data());
    EXPECT_EQ(ToHostVector(out), ref);
    ReleaseDeviceMemory();
  }
  const StoredTensor f(RandomFloats(V * 64, ++seed), DType::kF32, {V, 64}, false);
  auto q = QuantizeWeight(pool_, f.view(), QuantKind::kInt8Group, 64, DType::kF32);
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  ASSERT_FALSE(EmbedOnDevice(q->view));
  std::vector<float> ref(static_cast<size_t>(T * 64));
  ref::Embed(pool_, q->view, ids.data(), T, 2.0f, ref.data());
  Buffer<float> out = DeviceOf<float>(ref.size());
  dev::Embed(pool_, q->view, dids.data(), T, 2.0f, out.data());
  EXPECT_EQ(ToHostVector(out), ref);
  EXPECT_EQ(CachedWeightBytes(), 0);
}

TEST_F(CudaDevOpsTest, AttentionOnTheDeviceAndOnTheHostFallback) {
  uint32_t seed = 260;
  for (int64_t head_dim : {256, 512, 16}) {
    EXPECT_EQ(AttentionOnDevice(head_dim), head_dim != 16);
    for (int64_t T : {1, 5}) {
      SCOPED_TRACE(::testing::Message() << "head_dim=" << head_dim << " T=" << T);
      testing::AttentionCase c(T, head_dim, 1.0f / std::sqrt(static_cast<float>(head_dim)), &seed);
      AttentionArgs a = c.args;
      std::vector<float> ref(static_cast<size_t>(c.out_size()));
      a.out = ref.data();
      ref::Attention(pool_, a);
      Buffer<float> dq = OnDevice(c.q), dk = OnDevice(c.k), dv = OnDevice(c.v);
      Buffer<int32_t> dqp = OnDevice(c.q_pos), dkp = OnDevice(c.k_pos);
      Buffer<float> dout = DeviceOf<float>(ref.size());
      AttentionArgs d = a;
      d.q = dq.data(), d.k = dk.data(), d.v = dv.data();
      d.q_pos = dqp.data(), d.k_pos = dkp.data();
      d.out = dout.data();
      dev::Attention(pool_, d);
      EXPECT_LE(MaxAbsError(ToHostVector(dout), ref), 1e-5);
    }
  }
}

// Ops queue without waiting: a chain of dev ops on one buffer, read back once at the end.
TEST_F(CudaDevOpsTest, AChainOfOpsIsReadBackOnce) {
  const int64_t R = 2, D = 129, N = 41;
  const std::vector<float> x = RandomFloats(R * D, 270, -2.0f, 2.0f);
  const StoredTensor norm(RandomFloats(D, 271, 0.5f, 1.5f), DType::kF32, {D}, false);
  const StoredTensor w(RandomFloats(N * D, 272), DType::kBF16, {N, D}, false);
  std::vector<float> h = x, ref(static_cast<size_t>(R * N));
  ref::RmsNorm(pool_, h.data(), norm.view(), R, D, 1e-6f, h.data());
  ref::Scale(pool_, h.data(), R * D, 1.5f);
  ref::MatMul(pool_, w.view(), h.data(), R, ref.data());
  ref::Softcap(pool_, ref.data(), R * N, 30.0f);
  Buffer<float> dh = OnDevice(x), dy = DeviceOf<float>(ref.size());
  dev::RmsNorm(pool_, dh.data(), norm.view(), R, D, 1e-6f, dh.data());
  dev::Scale(pool_, dh.data(), R * D, 1.5f);
  dev::MatMul(pool_, w.view(), dh.data(), R, dy.data());
  dev::Softcap(pool_, dy.data(), R * N, 30.0f);
  EXPECT_LE(MaxScaledError(ToHostVector(dy), ref, 1.0), 1e-4);
}

}  // namespace
}  // namespace g4::cuda
