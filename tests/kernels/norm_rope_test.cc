// The CPU backend's NormRope (its op table: the SIMD RmsNorm, then the ref Rope) against
// ref::NormRope, and the op's contract: per-head norm with the weight, then the rotation of each
// pair (j, j + D/2) by positions[t] * inv_freq[j]; no rotation without inv_freq. Tolerance as
// RmsNorm's (rms_norm_test.cc): 1e-5 of the head's largest |ref|.
#include <algorithm>
#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/ref/kernels.h"
#include "kernels/test_util.h"
#include "ops/backend.h"

namespace g4 {
namespace {

using testing::InvFreq;
using testing::MaxRowError;
using testing::RandomFloats;
using testing::StoredTensor;

TEST(NormRopeTest, CpuTableMatchesRef) {
  ThreadPool pool(3);
  const NormRopeFn cpu = GetOpTable(BackendKind::kCpu).norm_rope;
  ASSERT_NE(cpu, nullptr);
  uint32_t seed = 1;
  for (int64_t T : {1, 4}) {
    for (int64_t H : {1, 3}) {
      for (int64_t D : {1, 7, 64, 512}) {
        for (DType dt : testing::kFloatDTypes) {
          for (bool rotate : {false, true}) {
            SCOPED_TRACE(::testing::Message() << "T=" << T << " H=" << H << " D=" << D
                                              << " w=" << DTypeName(dt) << " rotate=" << rotate);
            const std::vector<float> inv = InvFreq(D, 1e4, D / 2);
            std::vector<int32_t> pos(static_cast<size_t>(T));
            for (int64_t t = 0; t < T; ++t) pos[static_cast<size_t>(t)] = 1000 * t + 3;
            const StoredTensor w(RandomFloats(D, ++seed, -0.5f, 2.0f), dt, {D}, true);
            std::vector<float> x = RandomFloats(T * H * D, ++seed, -3.0f, 3.0f), ref = x;
            const float* f = rotate ? inv.data() : nullptr;
            ref::NormRope(pool, ref.data(), w.view(), pos.data(), T, H, D, 1e-6f, f);
            cpu(pool, x.data(), w.view(), pos.data(), T, H, D, 1e-6f, f);
            EXPECT_LE(MaxRowError(x, ref, D), 1e-5);
          }
        }
      }
    }
  }
}

// One head of D = 4 by hand: the norm, then pair (0, 2) rotated by 0.5 rad, pair (1, 3) not.
TEST(NormRopeTest, RefIsNormThenRotation) {
  ThreadPool pool(1);
  std::vector<float> x = {1.0f, -2.0f, 3.0f, 0.5f};
  const std::vector<float> wv = {1.0f, 2.0f, 0.5f, 1.0f};
  const std::vector<float> inv = {0.25f, 0.0f};
  const int32_t pos = 2;
  const double inv_rms = 1.0 / std::sqrt((1 + 4 + 9 + 0.25) / 4.0 + 1e-6);
  const double n[4] = {1 * inv_rms, -4 * inv_rms, 1.5 * inv_rms, 0.5 * inv_rms};
  ref::NormRope(pool, x.data(), TensorView{wv.data(), DType::kF32, {4}}, &pos, 1, 1, 4, 1e-6f,
                inv.data());
  const double c = std::cos(0.5), s = std::sin(0.5);
  EXPECT_NEAR(x[0], n[0] * c - n[2] * s, 1e-6);
  EXPECT_NEAR(x[2], n[2] * c + n[0] * s, 1e-6);
  EXPECT_NEAR(x[1], n[1], 1e-6);
  EXPECT_NEAR(x[3], n[3], 1e-6);
}

}  // namespace
}  // namespace g4
