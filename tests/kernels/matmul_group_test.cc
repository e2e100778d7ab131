// The GroupedMatMul cases (matmul_group_test.h) on the CPU backend's table (one MatMul per
// weight, GeluMul after a gated group), every Highway target this machine runs, pools of 1 and 3
// threads.
#include "kernels/matmul_group_test.h"

namespace g4::testing {

INSTANTIATE_TEST_SUITE_P(Cpu, MatMulGroupTest, ::testing::ValuesIn(CpuOpBackends()),
                         OpBackendName);

}  // namespace g4::testing
