// Helpers for the GPU tests of the CUDA op functions (kernels/cuda/kernels.h): a fixture that
// opens the device for its case (skipping without one) and checks that no CUDA error was
// recorded, and error measures against the ref kernels.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "kernels/cuda/kernels.h"
#include "kernels/test_util.h"

namespace g4::cuda::testing {

class CudaOpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dc = OpenDevice(0);
    if (!dc.ok()) {
      GTEST_SKIP() << "no usable CUDA device, GPU test skipped: " << dc.status().message();
    }
    device_ = *dc;
    policy_ = PolicyOf(*device_);
  }
  // The weight cache never looks at bytes (kernels.h): a case that frees a weight and makes
  // another in a loop calls ReleaseDeviceMemory() between. Every case closes the device (its
  // cache and error go with it), so the next case starts from a fresh one.
  void TearDown() override {
    if (IsSkipped()) return;
    EXPECT_TRUE(LastError().ok()) << LastError().ToString();
    device_.reset();
  }
  ThreadPool pool_{1};
  std::shared_ptr<DeviceContext> device_;
  DevicePolicy policy_;
};

using g4::testing::MaxScaledError;

using g4::testing::MatMulError;

// Random q/k/v for T queries against S = 19 keys (4 query heads over 2 KV heads), key slot 3
// empty, the queries the last T positions, a window of 7: the host arrays and their args
// (out unset), a case every attention test of the CUDA ops shares.
struct AttentionCase {
  std::vector<float> q, k, v;
  std::vector<int32_t> q_pos, k_pos;
  AttentionArgs args;

  AttentionCase(int64_t T, int64_t head_dim, float scale, uint32_t* seed) {
    const int64_t S = 19, H = 4, KV = 2;
    q = g4::testing::RandomFloats(T * H * head_dim, ++*seed);
    k = g4::testing::RandomFloats(S * KV * head_dim, ++*seed);
    v = g4::testing::RandomFloats(S * KV * head_dim, ++*seed);
    k_pos.resize(static_cast<size_t>(S));
    for (int64_t s = 0; s < S; ++s) k_pos[static_cast<size_t>(s)] = static_cast<int32_t>(s);
    k_pos[3] = -1;  // an empty slot
    for (int64_t t = 0; t < T; ++t) q_pos.push_back(static_cast<int32_t>(S - T + t));
    args.q = q.data(), args.k = k.data(), args.v = v.data();
    args.q_pos = q_pos.data(), args.k_pos = k_pos.data();
    args.T = T, args.S = S, args.n_heads = H, args.n_kv_heads = KV, args.head_dim = head_dim;
    args.window = 7;
    args.scale = scale;
  }
  AttentionCase(const AttentionCase&) = delete;
  AttentionCase& operator=(const AttentionCase&) = delete;
  int64_t out_size() const { return args.T * args.n_heads * args.head_dim; }
};

}  // namespace g4::cuda::testing
