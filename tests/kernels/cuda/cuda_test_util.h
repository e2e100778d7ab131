// Helpers for the GPU tests of the CUDA op functions (kernels/cuda/kernels.h): a fixture that
// skips without a device and checks that no CUDA error was recorded, and error measures against
// the ref kernels.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/cuda/kernels.h"

namespace g4::cuda::testing {

class CudaOpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto p = Init(0);
    if (!p.ok()) GTEST_SKIP() << "no usable CUDA device, GPU test skipped: " << p.status().message();
    policy_ = *p;
    ReleaseDeviceMemory();  // no weights cached at addresses an earlier test freed
  }
  // The weight cache never looks at bytes (kernels.h): a case that frees a weight and makes
  // another in a loop calls ReleaseDeviceMemory() between; every case ends with one here.
  void TearDown() override {
    if (IsSkipped()) return;
    EXPECT_TRUE(LastError().ok()) << LastError().ToString();
    ReleaseDeviceMemory();
  }
  ThreadPool pool_{1};
  DevicePolicy policy_;
};

// max over i of |y - ref| / (|ref| + floor): relative error, with `floor` so values near 0 are
// judged on an absolute scale. NaN anywhere gives infinity.
inline double MaxScaledError(const std::vector<float>& y, const std::vector<float>& ref,
                             double floor) {
  EXPECT_EQ(y.size(), ref.size());
  double worst = 0.0;
  for (size_t i = 0; i < y.size() && i < ref.size(); ++i) {
    const double e = std::fabs(static_cast<double>(y[i]) - ref[i]) / (std::fabs(ref[i]) + floor);
    if (!(e <= worst)) worst = std::isnan(e) ? INFINITY : e;
  }
  return worst;
}

// max over outputs of |y - ref| / sum_k |x w|: a matmul's error on the scale of its terms.
inline double MatMulError(const TensorView& w, const std::vector<float>& x, int64_t T,
                          const std::vector<float>& y, const std::vector<float>& ref) {
  const int64_t N = w.dim(0), K = w.dim(1);
  double worst = 0.0;
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t n = 0; n < N; ++n) {
      double mag = 1e-30;
      for (int64_t k = 0; k < K; ++k) mag += std::fabs(x[t * K + k] * w.at(n * K + k));
      const double e = std::fabs(y[t * N + n] - ref[t * N + n]) / mag;
      if (!(e <= worst)) worst = std::isnan(e) ? INFINITY : e;
    }
  }
  return worst;
}

}  // namespace g4::cuda::testing
