// The GeluMul cases (kernels/gelu_test.h) on the CUDA device.
#include "kernels/gelu_test.h"

#include "kernels/cuda/staged_ops.h"

namespace g4::testing {

INSTANTIATE_TEST_SUITE_P(Cuda, GeluTest, ::testing::ValuesIn(cuda::staged::OpBackends()),
                         OpBackendName);

}  // namespace g4::testing
