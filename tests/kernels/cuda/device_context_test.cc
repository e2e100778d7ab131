// The device context's life (kernels/cuda/device_context.h): owners share the one open context;
// the ops run on it while anyone holds it; it closes with its last owner (its weight cache, error
// and stream with it), so a later Open starts fresh; an OpGraph keeps its context open; a kCuda
// Backend owns one for its life. Skips without a device.
#include "kernels/cuda/device_context.h"

#include <gtest/gtest.h>

#include <memory>
#include <utility>
#include <vector>

#include "kernels/cuda/device_buffers.h"
#include "kernels/cuda/kernels.h"
#include "kernels/test_util.h"
#include "ops/backend.h"

namespace g4::cuda {
namespace {

using testing::OnDevice;
using testing::ToHostVector;
using g4::testing::RandomFloats;
using g4::testing::StoredTensor;

std::shared_ptr<DeviceContext> OpenOrSkip() {
  auto dc = DeviceContext::Open(0);
  return dc.ok() ? *dc : nullptr;
}

TEST(CudaDeviceContextTest, OwnersShareOneContextThatClosesWithTheLast) {
  std::shared_ptr<DeviceContext> a = OpenOrSkip();
  if (a == nullptr) GTEST_SKIP() << "no usable CUDA device";
  std::shared_ptr<DeviceContext> b = OpenOrSkip();
  EXPECT_EQ(a, b);
  EXPECT_EQ(DeviceContext::Current(), a.get());
  EXPECT_EQ(ActiveDevice(), a.get());
  EXPECT_NE(a->stream(), nullptr);
  a.reset();
  EXPECT_EQ(DeviceContext::Current(), b.get());  // b still holds it
  b.reset();
  EXPECT_EQ(DeviceContext::Current(), nullptr);
  EXPECT_EQ(ActiveDevice(), nullptr);
  // Without an open device the memory refuses, naming why.
  EXPECT_EQ(DeviceMemory().Alloc(64), nullptr);
  char host[4] = {};
  const Status s = DeviceMemory().Download(host, host, 4);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_EQ(s.message(), LastError().message());
}

TEST(CudaDeviceContextTest, ClosingFreesTheWeightCacheAndAFailureDiesWithItsContext) {
  std::shared_ptr<DeviceContext> dc = OpenOrSkip();
  if (dc == nullptr) GTEST_SKIP() << "no usable CUDA device";
  ThreadPool pool(1);
  const int64_t N = 9, K = 32;
  const StoredTensor w(RandomFloats(N * K, 5), DType::kF32, {N, K}, false);
  Buffer<float> x = OnDevice(RandomFloats(K, 6)), y = OnDevice(std::vector<float>(N, 0.0f));
  dev::MatMul(pool, w.view(), x.data(), 1, y.data());
  (void)ToHostVector(y);
  EXPECT_EQ(CachedWeightBytes(), N * K * 4);
  // A failure is sticky for this context: later ops do nothing, transfers return it.
  EXPECT_FALSE(dc->Ok(Internal("injected"), "test"));
  EXPECT_TRUE(dc->failed());
  EXPECT_EQ(ActiveDevice(), nullptr);
  EXPECT_FALSE(DeviceMemory().Upload(y.data(), std::vector<float>(N).data(), N * 4).ok());
  dc.reset();
  EXPECT_EQ(CachedWeightBytes(), 0);
  // A fresh context: no error, an empty cache, the ops run again.
  dc = OpenOrSkip();
  ASSERT_NE(dc, nullptr);
  EXPECT_TRUE(LastError().ok()) << LastError().ToString();
  EXPECT_EQ(CachedWeightBytes(), 0);
  Buffer<float> a = OnDevice(std::vector<float>{1, 2}), out = OnDevice(std::vector<float>{0, 0});
  dev::Add(pool, a.data(), a.data(), 2, out.data());
  EXPECT_EQ(ToHostVector(out), (std::vector<float>{2, 4}));
}

TEST(CudaDeviceContextTest, AGraphKeepsItsContextOpen) {
  std::shared_ptr<DeviceContext> dc = OpenOrSkip();
  if (dc == nullptr) GTEST_SKIP() << "no usable CUDA device";
  ThreadPool pool(1);
  Buffer<float> x = OnDevice(std::vector<float>{1, 2, 3});
  ASSERT_TRUE(BeginCapture().ok());
  dev::Scale(pool, x.data(), 3, 2.0f);
  auto graph = EndCapture();
  ASSERT_TRUE(graph.ok()) << graph.status().ToString();
  DeviceContext* raw = dc.get();
  dc.reset();
  EXPECT_EQ(DeviceContext::Current(), raw);  // the graph holds it
  ASSERT_TRUE((*graph)->Launch().ok());
  EXPECT_EQ(ToHostVector(x), (std::vector<float>{2, 4, 6}));
  graph->reset();
  EXPECT_EQ(DeviceContext::Current(), nullptr);
}

TEST(CudaDeviceContextTest, ABackendOwnsTheContextForItsLife) {
  if (OpenOrSkip() == nullptr) GTEST_SKIP() << "no usable CUDA device";
  EXPECT_EQ(DeviceContext::Current(), nullptr);  // the probe above let go
  {
    Backend a(BackendKind::kCuda, 1);
    ASSERT_TRUE(a.status().ok()) << a.status().ToString();
    DeviceContext* open = DeviceContext::Current();
    ASSERT_NE(open, nullptr);
    Backend b(BackendKind::kCuda, 1);  // a second backend shares it
    EXPECT_EQ(DeviceContext::Current(), open);
  }
  EXPECT_EQ(DeviceContext::Current(), nullptr);
}

}  // namespace
}  // namespace g4::cuda
