// The Add and Scale cases (kernels/elementwise_test.h) on the CUDA device.
#include "kernels/elementwise_test.h"

#include "kernels/cuda/staged_ops.h"

namespace g4::testing {

INSTANTIATE_TEST_SUITE_P(Cuda, ElementwiseTest, ::testing::ValuesIn(cuda::staged::OpBackends()),
                         OpBackendName);

}  // namespace g4::testing
