// The Softcap cases (softcap_test.h) on the CPU kernels: every Highway target this machine
// runs, pools of 1 and 3 threads; and the CPU tolerance catches an error just above it.
#include "kernels/softcap_test.h"

#include <vector>

#include "kernels/cpu/kernels.h"

namespace g4 {
namespace testing {

INSTANTIATE_TEST_SUITE_P(Cpu, SoftcapTest, ::testing::ValuesIn(CpuOpBackends()), OpBackendName);

}  // namespace testing

namespace {

TEST(SoftcapComparator, CatchesSmallErrors) {
  ThreadPool pool(1);
  const int64_t n = 100;
  std::vector<float> x = testing::SoftcapLogits(n, 3, 30.0f), ref = x;
  cpu::Softcap(pool, x.data(), n, 30.0f);
  ref::Softcap(pool, ref.data(), n, 30.0f);
  EXPECT_LE(testing::MaxScaledError(x, ref, 0.0), testing::kSoftcapCpuTol);
  x[50] *= 1.0f + 1e-6f;
  EXPECT_GT(testing::MaxScaledError(x, ref, 0.0), testing::kSoftcapCpuTol);
}

}  // namespace
}  // namespace g4
