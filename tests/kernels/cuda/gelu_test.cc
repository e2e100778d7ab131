// cuda::GeluMul against ref::GeluMul (f64): odd n, in place on gate and on up, rows of up a
// stride apart. The kernel is f32 with tanhf (<= 2 ulp): about 1e-6 relative; tolerance 1e-5 of
// |ref| + 1e-6 absolute.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cuda/cuda_test_util.h"
#include "kernels/ref/kernels.h"
#include "kernels/test_util.h"

namespace g4::cuda {
namespace {

using testing::CudaOpTest;
using testing::MaxScaledError;
using g4::testing::RandomFloats;

class CudaGeluTest : public CudaOpTest {};

TEST_F(CudaGeluTest, MatchesRefOnOddSizesAndInPlace) {
  uint32_t seed = 20;
  for (int64_t n : {1, 7, 1023, 100003}) {
    for (int alias = 0; alias < 3; ++alias) {  // 0: separate out, 1: out = gate, 2: out = up
      SCOPED_TRACE(::testing::Message() << "n=" << n << " alias=" << alias);
      std::vector<float> gate = RandomFloats(n, ++seed, -8.0f, 8.0f);
      std::vector<float> up = RandomFloats(n, ++seed, -3.0f, 3.0f);
      std::vector<float> ref(gate.size()), out(gate.size());
      ref::GeluMul(pool_, gate.data(), up.data(), 1, n, n, ref.data());
      float* dst = alias == 0 ? out.data() : alias == 1 ? gate.data() : up.data();
      GeluMul(pool_, gate.data(), up.data(), 1, n, n, dst);
      const std::vector<float> y(dst, dst + n);
      EXPECT_LE(MaxScaledError(y, ref, 0.1), 1e-5);
    }
  }
}

// Rows of `up` up_stride apart (the PLE branch's layer slice of [R, L, P]), in place on gate;
// the floats between those rows are NaN and must not be read.
TEST_F(CudaGeluTest, StridedRowsMatchRef) {
  uint32_t seed = 40;
  for (int64_t R : {1, 3, 11}) {
    for (int64_t n : {1, 33, 256}) {
      SCOPED_TRACE(::testing::Message() << "R=" << R << " n=" << n);
      const int64_t stride = 2 * n + 3;
      std::vector<float> gate = RandomFloats(R * n, ++seed, -8.0f, 8.0f);
      std::vector<float> up(static_cast<size_t>((R - 1) * stride + n), std::nanf(""));
      const std::vector<float> rows = RandomFloats(R * n, ++seed, -3.0f, 3.0f);
      for (int64_t r = 0; r < R; ++r) {
        std::copy_n(rows.begin() + r * n, n, up.begin() + r * stride);
      }
      std::vector<float> ref(gate.size());
      ref::GeluMul(pool_, gate.data(), up.data(), R, n, stride, ref.data());
      GeluMul(pool_, gate.data(), up.data(), R, n, stride, gate.data());
      EXPECT_LE(MaxScaledError(gate, ref, 0.1), 1e-5);
    }
  }
}

}  // namespace
}  // namespace g4::cuda
