// Helpers for the GPU tests of the heavy CUDA kernels (matmul, matmul_quant, attention): skip
// without a device, device buffers that upload / download host vectors, the device's limits and
// the GEMM tiles that fit it.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cuda/device.h"
#include "kernels/cuda/policy.h"
#include "kernels/cuda/tiles.h"

namespace g4::cuda::testing {

// The limits of device 0, or the reason there is none (the test then skips).
inline StatusOr<DeviceLimits> DeviceOrReason() {
  auto info = QueryDevice(0);
  if (!info.ok()) return info.status();
  return LimitsOf(*info);
}

// Every tensor-core GEMM tile shape (kGemmCandidates) whose shared memory with `w_parts` weight
// parts (1 dense, 2 int4) fits the device.
inline std::vector<GemmTile> GemmTilesFitting(const DeviceLimits& dev, int64_t w_parts) {
  std::vector<GemmTile> out;
  for (const GemmShape& s : kGemmCandidates) {
    GemmTile t;
    t.bm = s.bm, t.bn = s.bn, t.bk = s.bk, t.stages = s.stages;
    t.smem_bytes = GemmTileSmemBytes(t.bm, t.bn, t.bk, t.stages, w_parts);
    t.needs_optin = t.smem_bytes > dev.smem_default;
    if (t.smem_bytes <= dev.smem_optin) out.push_back(t);
  }
  return out;
}

#define G4_SKIP_WITHOUT_GPU(limits_var)                                                  \
  auto limits_var##_or = ::g4::cuda::testing::DeviceOrReason();                           \
  if (!limits_var##_or.ok()) {                                                            \
    GTEST_SKIP() << "no CUDA device, GPU test skipped: " << limits_var##_or.status().message(); \
  }                                                                                       \
  [[maybe_unused]] const ::g4::cuda::DeviceLimits limits_var = *limits_var##_or

// Raw device memory holding a copy of `bytes` host bytes (or zeroed), freed on destruction.
class DeviceBytes {
 public:
  explicit DeviceBytes(size_t bytes, const void* host = nullptr) : bytes_(bytes) {
    EXPECT_EQ(cudaMalloc(&ptr_, bytes > 0 ? bytes : 1), cudaSuccess);
    if (host != nullptr && bytes > 0) {
      EXPECT_EQ(cudaMemcpy(ptr_, host, bytes, cudaMemcpyHostToDevice), cudaSuccess);
    } else {
      EXPECT_EQ(cudaMemset(ptr_, 0, bytes > 0 ? bytes : 1), cudaSuccess);
    }
  }
  ~DeviceBytes() { cudaFree(ptr_); }
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;

  void* get() const { return ptr_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  template <typename T>
  std::vector<T> Download(size_t n) const {
    std::vector<T> out(n);
    EXPECT_EQ(cudaMemcpy(out.data(), ptr_, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return out;
  }

 private:
  void* ptr_ = nullptr;
  size_t bytes_;
};

template <typename T>
DeviceBytes Upload(const std::vector<T>& v) {
  return DeviceBytes(v.size() * sizeof(T), v.data());
}

// Waits for the kernels and fails the test on an asynchronous error.
inline void SyncOrFail() {
  const cudaError_t e = cudaDeviceSynchronize();
  EXPECT_EQ(e, cudaSuccess) << cudaGetErrorString(e);
}

}  // namespace g4::cuda::testing
