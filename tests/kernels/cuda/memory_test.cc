// cuda::DeviceMemory (kernels.h, ops/memory.h): host -> device -> device -> host round trips of
// odd byte counts and at offsets inside an allocation, Buffer<float> growth and moves on it, an
// allocation larger than any device giving nullptr without failing the device, and without a
// device: no allocation and every transfer an error.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cuda/cuda_test_util.h"
#include "kernels/cuda/device_buffers.h"
#include "kernels/cuda/kernels.h"
#include "kernels/test_util.h"
#include "ops/memory.h"

namespace g4::cuda {
namespace {

using testing::CudaOpTest;
using testing::ToHostVector;
using g4::testing::RandomFloats;

class CudaMemoryTest : public CudaOpTest {};

std::vector<unsigned char> RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<unsigned char> v(n);
  for (auto& b : v) b = static_cast<unsigned char>(rng());
  return v;
}

TEST_F(CudaMemoryTest, IsDeviceMemory) {
  Memory& m = DeviceMemory();
  EXPECT_TRUE(m.is_device());
  EXPECT_STREQ(m.name(), "cuda");
  EXPECT_EQ(&m, &DeviceMemory());
}

// Small uploads are queued from a pinned staging buffer of two 1 MiB halves. Many of them, with
// the host source overwritten right after each call (as a caller's temporary is), wrap both
// halves several times: every buffer must still hold what was uploaded into it, so a half is
// never refilled while its copies are in flight.
TEST_F(CudaMemoryTest, ManySmallUploadsWrapTheStagingBufferIntact) {
  Memory& m = DeviceMemory();
  constexpr size_t kN = 60, kBytes = 100003;  // ~6 MiB in all: three rounds of both halves
  std::vector<void*> dev(kN);
  std::vector<unsigned char> host(kBytes);
  for (size_t i = 0; i < kN; ++i) {
    dev[i] = m.Alloc(kBytes);
    ASSERT_NE(dev[i], nullptr);
    host = RandomBytes(kBytes, static_cast<uint32_t>(100 + i));
    ASSERT_TRUE(m.Upload(dev[i], host.data(), kBytes).ok());
    std::fill(host.begin(), host.end(), 0);  // the source is gone once Upload returns
  }
  for (size_t i = 0; i < kN; ++i) {
    std::vector<unsigned char> back(kBytes);
    ASSERT_TRUE(m.Download(back.data(), dev[i], kBytes).ok());
    EXPECT_EQ(back, RandomBytes(kBytes, static_cast<uint32_t>(100 + i))) << "upload " << i;
    m.Free(dev[i]);
  }
}

TEST_F(CudaMemoryTest, UploadCopyDownloadRoundTripsOddSizes) {
  Memory& m = DeviceMemory();
  uint32_t seed = 1;
  for (size_t n : {1, 3, 255, 257, 4099, 1000003}) {
    SCOPED_TRACE(::testing::Message() << "bytes=" << n);
    const std::vector<unsigned char> host = RandomBytes(n, ++seed);
    void* a = m.Alloc(n);
    void* b = m.Alloc(n + 5);
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    ASSERT_TRUE(m.Upload(a, host.data(), n).ok());
    // Into b at an odd offset, then back out of the middle of b.
    ASSERT_TRUE(m.Copy(static_cast<char*>(b) + 5, a, n).ok());
    std::vector<unsigned char> back(n, 0);
    const Status s = m.Download(back.data(), static_cast<char*>(b) + 5, n);
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(back, host);
    // A partial download of the first byte and of the tail.
    unsigned char first = 0;
    ASSERT_TRUE(m.Download(&first, a, 1).ok());
    EXPECT_EQ(first, host[0]);
    const size_t tail = n / 2;
    std::vector<unsigned char> t(n - tail);
    ASSERT_TRUE(m.Download(t.data(), static_cast<char*>(a) + tail, n - tail).ok());
    EXPECT_TRUE(std::memcmp(t.data(), host.data() + tail, n - tail) == 0);
    m.Free(a);
    m.Free(b);
  }
  // Zero bytes: nothing moves, nothing fails.
  void* p = m.Alloc(0);
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(m.Upload(p, nullptr, 0).ok());
  EXPECT_TRUE(m.Copy(p, p, 0).ok());
  EXPECT_TRUE(m.Download(nullptr, p, 0).ok());
  m.Free(p);
  m.Free(nullptr);
}

TEST_F(CudaMemoryTest, BufferOfFloatGrowsKeepsCapacityAndMoves) {
  Buffer<float> b(DeviceMemory());
  EXPECT_EQ(&b.memory(), &DeviceMemory());
  const std::vector<float> x = RandomFloats(1001, 5);
  ASSERT_TRUE(b.Assign(x).ok());
  EXPECT_EQ(b.size(), x.size());
  EXPECT_EQ(ToHostVector(b), x);
  float* first = b.data();
  // Smaller: the same allocation; larger: a new one.
  const std::vector<float> y = RandomFloats(37, 6);
  ASSERT_TRUE(b.Assign(y).ok());
  EXPECT_EQ(b.data(), first);
  EXPECT_EQ(ToHostVector(b), y);
  const std::vector<float> z = RandomFloats(4097, 7);
  ASSERT_TRUE(b.Assign(z).ok());
  EXPECT_EQ(ToHostVector(b), z);
  Buffer<float> moved = std::move(b);
  EXPECT_EQ(b.data(), nullptr);  // NOLINT(bugprone-use-after-move): the moved-from state
  EXPECT_EQ(ToHostVector(moved), z);
}

TEST_F(CudaMemoryTest, OutOfMemoryIsNullptrAndDoesNotFailTheDevice) {
  Memory& m = DeviceMemory();
  EXPECT_EQ(m.Alloc(size_t{1} << 52), nullptr);  // 4 PiB: more than any device
  Buffer<float> huge(m);
  const Status s = huge.Allocate(size_t{1} << 50);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("cuda memory"), std::string::npos) << s.message();
  EXPECT_TRUE(LastError().ok()) << LastError().ToString();
  // The device still works.
  const std::vector<float> x = RandomFloats(9, 8);
  Buffer<float> small(m);
  ASSERT_TRUE(small.Assign(x).ok());
  EXPECT_EQ(ToHostVector(small), x);
}

// Without a device (no driver, no GPU) the memory refuses everything, with the reason.
TEST(CudaMemoryNoDeviceTest, AllocFailsAndTransfersReportWhy) {
  if (OpenDevice(0).ok()) GTEST_SKIP() << "a CUDA device is present";
  Memory& m = DeviceMemory();
  EXPECT_TRUE(m.is_device());
  EXPECT_EQ(m.Alloc(64), nullptr);
  char host[4] = {};
  for (const Status& s : {m.Upload(host, host, 4), m.Download(host, host, 4),
                          m.Copy(host, host, 4)}) {
    EXPECT_FALSE(s.ok());
    EXPECT_EQ(s.message(), LastError().message());
  }
  EXPECT_FALSE(LastError().ok());
}

}  // namespace
}  // namespace g4::cuda
