// The Softcap cases (kernels/softcap_test.h) on the CUDA device.
#include "kernels/softcap_test.h"

#include "kernels/cuda/staged_ops.h"

namespace g4::testing {

INSTANTIATE_TEST_SUITE_P(Cuda, SoftcapTest, ::testing::ValuesIn(cuda::staged::OpBackends()),
                         OpBackendName);

}  // namespace g4::testing
