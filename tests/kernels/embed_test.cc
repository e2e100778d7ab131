// The Embed cases (embed_test.h) on the CPU kernels: every Highway target this machine runs,
// pools of 1 and 3 threads.
#include "kernels/embed_test.h"

namespace g4::testing {

INSTANTIATE_TEST_SUITE_P(Cpu, EmbedTest, ::testing::ValuesIn(CpuOpBackends()), OpBackendName);

}  // namespace g4::testing
