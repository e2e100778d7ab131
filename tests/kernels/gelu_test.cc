// The GeluMul cases (gelu_test.h) on the CPU kernels: every Highway target this machine runs,
// pools of 1 and 3 threads; the CPU kernel's accuracy in the ordinary range, and its tolerance
// catching an error just above it.
#include "kernels/gelu_test.h"

#include <cmath>
#include <vector>

#include "kernels/cpu/kernels.h"

namespace g4 {
namespace testing {

INSTANTIATE_TEST_SUITE_P(Cpu, GeluTest, ::testing::ValuesIn(CpuOpBackends()), OpBackendName);

}  // namespace testing

namespace {

using testing::RandomFloats;

// In the ordinary range |x| <= 3 the result is within 1e-6 relative of the f64 tanh form.
TEST(GeluAccuracy, WithinOnePpmForModerateInputs) {
  ThreadPool pool(1);
  const int64_t n = 20001;
  std::vector<float> g(static_cast<size_t>(n)), up(static_cast<size_t>(n), 1.0f), out(g.size());
  for (int64_t i = 0; i < n; ++i) g[i] = -3.0f + 6.0f * static_cast<float>(i) / (n - 1);
  cpu::GeluMul(pool, g.data(), up.data(), 1, n, n, out.data());
  for (int64_t i = 0; i < n; ++i) {
    const double ref = ref::GeluTanh(g[i]);
    ASSERT_LE(std::fabs(out[i] - ref), 1e-6 * std::fabs(ref) + 1e-30) << "x=" << g[i];
  }
}

TEST(GeluComparator, CatchesSmallErrors) {
  ThreadPool pool(1);
  const int64_t n = 257;
  const std::vector<float> g = RandomFloats(n, 5, -3.0f, 3.0f), u = RandomFloats(n, 6);
  std::vector<float> out(static_cast<size_t>(n)), ref(static_cast<size_t>(n));
  cpu::GeluMul(pool, g.data(), u.data(), 1, n, n, out.data());
  ref::GeluMul(pool, g.data(), u.data(), 1, n, n, ref.data());
  EXPECT_LE(testing::GeluErrorOverTol(g, u, out, ref), 1.0);
  out[100] *= 1.0f + 5e-6f;  // tolerance at |x| <= 3 is <= ~1.3e-6 relative
  EXPECT_GT(testing::GeluErrorOverTol(g, u, out, ref), 1.0);
}

}  // namespace
}  // namespace g4
