// Backend with kCuda (ops/backend.h): "cuda" parses; without a usable device (or in a build
// without CUDA) the Backend says why through status() / Create and its ops are the CPU ones;
// with a device, the policy line states the device decision and the ops run on the backend's
// device memory. Runs on every machine.
#include "ops/backend.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ops/memory.h"
#include "ops/probe.h"

#ifdef G4_HAS_CUDA
#include "kernels/cuda/device.h"
#endif

namespace g4 {
namespace {

bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(CudaBackendTest, ParsesCuda) {
  auto k = ParseBackendKind("cuda");
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(*k, BackendKind::kCuda);
  EXPECT_STREQ(BackendName(BackendKind::kCuda), "cuda");
  auto bad = ParseBackendKind("gpu");
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(Contains(bad.status().message(), "cuda")) << bad.status().message();
}

// Without a device the backend must report it, not crash, and still compute correctly.
void ExpectUnavailable(Backend& be, const std::string& why) {
  EXPECT_EQ(be.status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(Contains(be.status().message(), "--backend cuda: " + why)) << be.status().message();
  EXPECT_TRUE(Contains(be.PolicyString(), "backend=cpu ")) << be.PolicyString();
  auto created = Backend::Create(BackendKind::kCuda, 1);
  ASSERT_FALSE(created.ok());
  EXPECT_EQ(created.status().message(), be.status().message());
  EXPECT_FALSE(be.memory().is_device());  // host memory: the CPU ops run on it
  std::vector<float> a = {1.5f, -2.0f, 3.25f}, b = {0.5f, 2.0f, 1.0f}, out(3);
  be.Add(a.data(), b.data(), 3, out.data());
  EXPECT_EQ(out, (std::vector<float>{2.0f, 0.0f, 4.25f}));
}

TEST(CudaBackendTest, ReportsWhyCudaCannotRunOrStatesTheDevicePolicy) {
  Backend be(BackendKind::kCuda, 1);
#ifndef G4_HAS_CUDA
  ExpectUnavailable(be, "g4 was built without CUDA");
#else
  auto info = cuda::QueryDevice(0);
  if (!info.ok()) {
    ExpectUnavailable(be, "no CUDA device");
    return;
  }
  if (info->cc() < 75) {
    EXPECT_FALSE(be.status().ok());
    return;
  }
  ASSERT_TRUE(be.status().ok()) << be.status().ToString();
  const std::string p = be.PolicyString();
  EXPECT_EQ(p.rfind("backend=cuda device=", 0), 0u) << p;
  EXPECT_TRUE(Contains(p, " compute=" + std::string(info->cc() >= 80 ? "bf16" : "f16") + " "))
      << p;
  EXPECT_TRUE(Contains(p, " smem_optin=")) << p;
  EXPECT_TRUE(Contains(p, " w4a16_tile=")) << p;
  // The ops take pointers in the backend's memory: the device's.
  Memory& m = be.memory();
  EXPECT_TRUE(m.is_device());
  EXPECT_STREQ(m.name(), "cuda");
  const std::vector<float> a = {1.5f, -2.0f, 3.25f}, b = {0.5f, 2.0f, 1.0f};
  Buffer<float> da(m), db(m), dout(m);
  ASSERT_TRUE(da.Assign(a).ok());
  ASSERT_TRUE(db.Assign(b).ok());
  ASSERT_TRUE(dout.Allocate(3).ok());
  be.Add(da.data(), db.data(), 3, dout.data());
  std::vector<float> out(3);
  const Status s = m.Download(out.data(), dout.data(), dout.bytes());
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(out, (std::vector<float>{2.0f, 0.0f, 4.25f}));
  // Benchmarks judge decode against the device's memory bandwidth, not the host's.
  EXPECT_GT(MeasureReadBandwidth(be, size_t{1} << 20, 2), 0.0);
#endif
}

}  // namespace
}  // namespace g4
