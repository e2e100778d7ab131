// CUDA graphs of the cuda::dev ops (kernels.h: BeginCapture / EndCapture, ops/graph.h):
//   - a captured Add, Scale, KvWrite (slot from a device position), device-to-device Copy and
//     split-key Attention (its split state: memory nodes) run nothing while captured, and each
//     launch computes on the inputs the buffers hold then (refreshed by uploads in between);
//   - what a graph cannot record (an int8 matmul's host fallback, a weight's first upload, an
//     upload, a download, an allocation, a staged host-pointer op) fails EndCapture with
//     StatusCode::kFailedPrecondition naming the first such attempt, and the device stays usable;
//   - BeginCapture twice, EndCapture without BeginCapture are errors.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_test_util.h"
#include "kernels/cuda/device_buffers.h"
#include "kernels/cuda/staged_ops.h"
#include "kernels/ref/kernels.h"
#include "kernels/test_util.h"
#include "ops/quantize.h"

namespace g4::cuda {
namespace {

using testing::CudaOpTest;
using testing::DeviceOf;
using testing::MaxScaledError;
using testing::OnDevice;
using testing::ToHostVector;
using g4::testing::RandomFloats;
using g4::testing::StoredTensor;

class CudaGraphTest : public CudaOpTest {
 protected:
  // A failed assertion inside a capture must not leave the next test capturing.
  void TearDown() override {
    if (!IsSkipped() && Capturing()) (void)EndCapture();
    CudaOpTest::TearDown();
  }

  // Ends a capture that must fail: the status names `why`, the device is still fine.
  void ExpectRefused(const std::string& why) {
    auto g = EndCapture();
    ASSERT_FALSE(g.ok());
    EXPECT_EQ(g.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(g.status().message().find("cannot record a CUDA graph: "), std::string::npos)
        << g.status().message();
    EXPECT_NE(g.status().message().find(why), std::string::npos) << g.status().message();
    EXPECT_FALSE(Capturing());
    EXPECT_TRUE(LastError().ok()) << LastError().ToString();
  }

  // The device still runs ops after a refused capture.
  void ExpectUsable() {
    const std::vector<float> a = {1, 2, 3}, b = {10, 20, 30};
    Buffer<float> da = OnDevice(a), db = OnDevice(b), out = DeviceOf<float>(3);
    dev::Add(pool_, da.data(), db.data(), 3, out.data());
    EXPECT_EQ(ToHostVector(out), (std::vector<float>{11, 22, 33}));
    EXPECT_TRUE(LastError().ok()) << LastError().ToString();
  }
};

TEST_F(CudaGraphTest, ReplaysOpsOnTheInputsOfEachLaunch) {
  const int64_t n = 1000, row = 37, capacity = 16, window = 8;
  const std::vector<float> zeros(static_cast<size_t>(n), 0.0f);
  const std::vector<float> ones(static_cast<size_t>(n), 1.0f);
  Buffer<float> a = OnDevice(ones), b = OnDevice(ones), out = OnDevice(zeros),
                copy = OnDevice(zeros);
  Buffer<float> k = OnDevice(std::vector<float>(row, 0.0f)),
                v = OnDevice(std::vector<float>(row, 0.0f)),
                kc = OnDevice(std::vector<float>(capacity * row, 0.0f)),
                vc = OnDevice(std::vector<float>(capacity * row, 0.0f));
  Buffer<int32_t> pos = OnDevice(std::vector<int32_t>{0}),
                  pc = OnDevice(std::vector<int32_t>(capacity, -1));
  KvWriteArgs kv;
  kv.k = k.data(), kv.v = v.data(), kv.pos = pos.data();
  kv.C = 1, kv.row = row, kv.window = window, kv.capacity = capacity;
  kv.k_cache = kc.data(), kv.v_cache = vc.data(), kv.pos_cache = pc.data();
  // Waits for the uploads: anything run during the capture would see them.
  ASSERT_EQ(ToHostVector(pc), std::vector<int32_t>(capacity, -1));

  ASSERT_TRUE(BeginCapture().ok());
  EXPECT_TRUE(Capturing());
  dev::Add(pool_, a.data(), b.data(), n, out.data());  // out = a + b
  dev::Scale(pool_, out.data(), n, 2.0f);              // out *= 2
  dev::KvWrite(pool_, kv);
  ASSERT_TRUE(DeviceMemory().Copy(copy.data(), out.data(), out.bytes()).ok());
  auto g = EndCapture();
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_FALSE(Capturing());
  EXPECT_EQ((*g)->num_ops(), 4);
  // Recorded, not run: the outputs still hold their zeros (a run would give 4s, slot 0 = 0).
  EXPECT_EQ(ToHostVector(out), zeros);
  EXPECT_EQ(ToHostVector(copy), zeros);
  EXPECT_EQ(ToHostVector(pc), std::vector<int32_t>(capacity, -1));

  std::vector<float> want_kc(static_cast<size_t>(capacity * row), 0.0f), want_vc = want_kc;
  std::vector<int32_t> want_pc(static_cast<size_t>(capacity), -1);
  uint32_t seed = 900;
  // Positions 5 then 11: slots 5 and 3 of the ring of 8.
  for (int32_t p : {5, 11}) {
    SCOPED_TRACE(::testing::Message() << "position " << p);
    const std::vector<float> ha = RandomFloats(n, ++seed), hb = RandomFloats(n, ++seed);
    const std::vector<float> hk = RandomFloats(row, ++seed), hv = RandomFloats(row, ++seed);
    ASSERT_TRUE(a.Assign(ha).ok());
    ASSERT_TRUE(b.Assign(hb).ok());
    ASSERT_TRUE(k.Assign(hk).ok());
    ASSERT_TRUE(v.Assign(hv).ok());
    ASSERT_TRUE(pos.Assign(std::vector<int32_t>{p}).ok());
    ASSERT_TRUE((*g)->Launch().ok());
    std::vector<float> want(static_cast<size_t>(n));
    for (size_t i = 0; i < want.size(); ++i) want[i] = (ha[i] + hb[i]) * 2.0f;
    EXPECT_EQ(ToHostVector(out), want);
    EXPECT_EQ(ToHostVector(copy), want);
    const int64_t slot = p % window;
    for (int64_t i = 0; i < row; ++i) {
      want_kc[static_cast<size_t>(slot * row + i)] = hk[i];
      want_vc[static_cast<size_t>(slot * row + i)] = hv[i];
    }
    want_pc[static_cast<size_t>(slot)] = p;
    EXPECT_EQ(ToHostVector(kc), want_kc);
    EXPECT_EQ(ToHostVector(vc), want_vc);
    EXPECT_EQ(ToHostVector(pc), want_pc);
  }
}

TEST_F(CudaGraphTest, ReplaysSplitKeyAttention) {
  // Decode over a long view (S = 1024): the device plan splits the keys, so the graph holds the
  // split state's allocation (memory nodes) and the merge kernel.
  const int64_t S = 1024, H = 4, KV = 2, hd = 256;
  std::vector<int32_t> k_pos(static_cast<size_t>(S));
  for (int64_t s = 0; s < S; ++s) {
    k_pos[static_cast<size_t>(s)] = s < 700 ? static_cast<int32_t>(s) : -1;  // 700 keys
  }
  const std::vector<float> k = RandomFloats(S * KV * hd, 910), v = RandomFloats(S * KV * hd, 911);
  Buffer<float> dq = DeviceOf<float>(static_cast<size_t>(H * hd)), dk = OnDevice(k),
                dv = OnDevice(v), dout = DeviceOf<float>(static_cast<size_t>(H * hd));
  Buffer<int32_t> dqp = OnDevice(std::vector<int32_t>{0}), dkp = OnDevice(k_pos);
  AttentionArgs a;
  a.T = 1, a.S = S, a.n_heads = H, a.n_kv_heads = KV, a.head_dim = hd, a.window = 0;
  a.scale = 1.0f / 16.0f;
  a.q = dq.data(), a.k = dk.data(), a.v = dv.data(), a.q_pos = dqp.data(), a.k_pos = dkp.data();
  a.out = dout.data();

  ASSERT_TRUE(BeginCapture().ok());
  dev::Attention(pool_, a);
  auto g = EndCapture();
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_GE((*g)->num_ops(), 2);  // attention and its merge (and the memory nodes)

  uint32_t seed = 920;
  for (int32_t p : {650, 123}) {
    SCOPED_TRACE(::testing::Message() << "query position " << p);
    const std::vector<float> q = RandomFloats(H * hd, ++seed);
    ASSERT_TRUE(dq.Assign(q).ok());
    ASSERT_TRUE(dqp.Assign(std::vector<int32_t>{p}).ok());
    ASSERT_TRUE((*g)->Launch().ok());
    AttentionArgs h = a;
    const std::vector<int32_t> q_pos = {p};
    std::vector<float> ref(static_cast<size_t>(H * hd));
    h.q = q.data(), h.k = k.data(), h.v = v.data(), h.q_pos = q_pos.data();
    h.k_pos = k_pos.data(), h.out = ref.data();
    ref::Attention(pool_, h);
    EXPECT_LE(MaxScaledError(ToHostVector(dout), ref, 1e-3), 1e-4);
  }
}

TEST_F(CudaGraphTest, HostFallbackFailsTheCaptureAndTheDeviceStaysUsable) {
  const int64_t N = 29, K = 96;
  const StoredTensor f(RandomFloats(N * K, 930), DType::kF32, {N, K}, false);
  auto q8 = QuantizeWeight(pool_, f.view(), QuantKind::kInt8Group, 32, DType::kBF16);
  ASSERT_TRUE(q8.ok()) << q8.status().ToString();
  const std::vector<float> x = RandomFloats(K, 931);
  Buffer<float> dx = OnDevice(x), dy = OnDevice(std::vector<float>(N, 0.0f));

  ASSERT_TRUE(BeginCapture().ok());
  dev::MatMul(pool_, q8->view, dx.data(), 1, dy.data());
  dev::Scale(pool_, dy.data(), N, 2.0f);  // recorded, then discarded with the graph
  ExpectRefused("matmul of " + StorageName(q8->view) + " weight [29, 96] runs on the host");
  // Nothing ran: y still holds its zeros.
  EXPECT_EQ(ToHostVector(dy), std::vector<float>(N, 0.0f));
  ExpectUsable();
  // And the fallback still works outside a capture.
  dev::MatMul(pool_, q8->view, dx.data(), 1, dy.data());
  std::vector<float> ref(static_cast<size_t>(N));
  ref::MatMul(pool_, q8->view, x.data(), 1, ref.data());
  EXPECT_LE(MaxScaledError(ToHostVector(dy), ref, 1e-3), 1e-5);
}

TEST_F(CudaGraphTest, AttentionOnTheHostFailsTheCapture) {
  uint32_t seed = 935;
  testing::AttentionCase c(1, 16, 0.25f, &seed);  // head_dim 16: the host fallback
  ASSERT_FALSE(AttentionOnDevice(16));
  Buffer<float> q = OnDevice(c.q), k = OnDevice(c.k), v = OnDevice(c.v),
                out = OnDevice(std::vector<float>(static_cast<size_t>(c.out_size()), 0.0f));
  Buffer<int32_t> qp = OnDevice(c.q_pos), kp = OnDevice(c.k_pos);
  AttentionArgs a = c.args;
  a.q = q.data(), a.k = k.data(), a.v = v.data(), a.q_pos = qp.data(), a.k_pos = kp.data();
  a.out = out.data();
  ASSERT_TRUE(BeginCapture().ok());
  dev::Attention(pool_, a);
  ExpectRefused("attention with head_dim 16 runs on the host");
  EXPECT_EQ(ToHostVector(out), std::vector<float>(static_cast<size_t>(c.out_size()), 0.0f));
  ExpectUsable();
}

TEST_F(CudaGraphTest, FirstUseOfAWeightFailsTheCaptureThenItIsRecorded) {
  const int64_t N = 33, K = 64;
  const StoredTensor w(RandomFloats(N * K, 940), DType::kBF16, {N, K}, false);
  const std::vector<float> x = RandomFloats(K, 941);
  Buffer<float> dx = OnDevice(x), dy = OnDevice(std::vector<float>(N, 0.0f));

  ASSERT_TRUE(BeginCapture().ok());
  dev::MatMul(pool_, w.view(), dx.data(), 1, dy.data());
  ExpectRefused("the first use of weight [33, 64] bf16 uploads it");
  EXPECT_EQ(CachedWeightBytes(), 0);
  ExpectUsable();

  // Run once (uploads the weight), then the capture records it.
  dev::MatMul(pool_, w.view(), dx.data(), 1, dy.data());
  const std::vector<float> eager = ToHostVector(dy);
  ASSERT_TRUE(DeviceMemory().Upload(dy.data(), std::vector<float>(N, 0.0f).data(),
                                    static_cast<size_t>(N) * sizeof(float))
                  .ok());
  ASSERT_TRUE(BeginCapture().ok());
  dev::MatMul(pool_, w.view(), dx.data(), 1, dy.data());
  auto g = EndCapture();
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  ASSERT_TRUE((*g)->Launch().ok());
  EXPECT_EQ(ToHostVector(dy), eager);
}

TEST_F(CudaGraphTest, TransfersAndAllocationsFailTheCapture) {
  const std::vector<float> host = {1, 2, 3, 4};
  Buffer<float> d = OnDevice(host);
  std::vector<float> back(4, 0.0f);
  {
    ASSERT_TRUE(BeginCapture().ok());
    EXPECT_FALSE(DeviceMemory().Upload(d.data(), host.data(), 16).ok());
    EXPECT_FALSE(DeviceMemory().Download(back.data(), d.data(), 16).ok());  // not the first
    ExpectRefused("an upload of 16 bytes");
  }
  {
    ASSERT_TRUE(BeginCapture().ok());
    EXPECT_FALSE(DeviceMemory().Download(back.data(), d.data(), 16).ok());
    ExpectRefused("a download of 16 bytes");
    EXPECT_EQ(back, std::vector<float>(4, 0.0f));
  }
  {
    ASSERT_TRUE(BeginCapture().ok());
    EXPECT_EQ(DeviceMemory().Alloc(64), nullptr);
    ExpectRefused("a device allocation (cudaMalloc) of 64 bytes");
  }
  {
    // A free during a capture fails it and is done once the capture has ended.
    void* p = DeviceMemory().Alloc(64);
    ASSERT_NE(p, nullptr);
    ASSERT_TRUE(BeginCapture().ok());
    DeviceMemory().Free(p);
    ExpectRefused("a device free (cudaFree)");
  }
  {
    // The staged host-pointer ops copy from the host: refused, their outputs NaN.
    std::vector<float> out(4, 0.0f);
    // Once first, so its scratch exists: no growth below.
    staged::Ops().add(pool_, host.data(), host.data(), 4, out.data());
    ASSERT_TRUE(BeginCapture().ok());
    staged::Ops().add(pool_, host.data(), host.data(), 4, out.data());
    ExpectRefused("a copy from host memory to the device");
    EXPECT_TRUE(std::isnan(out[0]));
  }
  ExpectUsable();
  EXPECT_EQ(ToHostVector(d), host);
}

TEST_F(CudaGraphTest, BeginTwiceAndEndWithoutBeginAreErrors) {
  Buffer<float> x = OnDevice(std::vector<float>{1, 2});
  ASSERT_TRUE(BeginCapture().ok());
  const Status again = BeginCapture();
  EXPECT_EQ(again.code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Capturing());  // the first capture goes on
  dev::Scale(pool_, x.data(), 2, 3.0f);
  auto g = EndCapture();
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ((*g)->num_ops(), 1);
  EXPECT_TRUE((*g)->Launch().ok());
  EXPECT_EQ(ToHostVector(x), (std::vector<float>{3, 6}));
  EXPECT_EQ(EndCapture().status().code(), StatusCode::kFailedPrecondition);
  ExpectUsable();
}

}  // namespace
}  // namespace g4::cuda
