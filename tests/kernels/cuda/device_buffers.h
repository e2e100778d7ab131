// Device buffers for the tests of the cuda::dev ops (kernels.h): g4::Buffer on DeviceMemory()
// filled from host vectors, and their contents read back (every op queued before included).
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "kernels/cuda/kernels.h"
#include "ops/memory.h"

namespace g4::cuda::testing {

template <typename T>
Buffer<T> OnDevice(const std::vector<T>& host) {
  Buffer<T> b(DeviceMemory());
  const Status s = b.Assign(host);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return b;
}

// A device buffer of n elements, contents undefined (NaN bytes under the emulation).
template <typename T>
Buffer<T> DeviceOf(size_t n) {
  Buffer<T> b(DeviceMemory());
  const Status s = b.Allocate(n);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return b;
}

template <typename T>
std::vector<T> ToHostVector(const Buffer<T>& b) {
  std::vector<T> v(b.size());
  const Status s = DeviceMemory().Download(v.data(), b.data(), b.bytes());
  EXPECT_TRUE(s.ok()) << s.ToString();
  return v;
}

}  // namespace g4::cuda::testing
