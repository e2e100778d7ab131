// The KvWrite cases (kernels/kv_write_test.h) on the CUDA device through host pointers, and the
// same contract on device pointers (cuda::dev::KvWrite, the kCuda op).
#include "kernels/kv_write_test.h"

#include <cstdint>
#include <vector>

#include "kernels/cuda/cuda_test_util.h"
#include "kernels/cuda/device_buffers.h"
#include "kernels/cuda/staged_ops.h"

namespace g4 {
namespace testing {

INSTANTIATE_TEST_SUITE_P(Cuda, KvWriteTest, ::testing::ValuesIn(cuda::staged::OpBackends()),
                         OpBackendName);

}  // namespace testing

namespace cuda {
namespace {

using testing::CudaOpTest;
using testing::OnDevice;
using testing::ToHostVector;
using g4::testing::KvCase;
using g4::testing::KvCases;
using g4::testing::KvArgs;
using g4::testing::KvRun;

class CudaKvWriteTest : public CudaOpTest {};

TEST_F(CudaKvWriteTest, OnDevicePointersMatchTheContract) {
  uint32_t seed = 700;
  for (const KvCase& c : KvCases()) {
    SCOPED_TRACE(c.name);
    const KvRun run(c, &seed);
    // On DeviceMemory, every pointer a device pointer (the kCuda op).
    Buffer<float> dk = OnDevice(run.k), dv = OnDevice(run.v), dkc = OnDevice(run.start.k),
                  dvc = OnDevice(run.start.v);
    Buffer<int32_t> dpos = OnDevice(c.pos), dpc = OnDevice(run.start.pos);
    Buffer<int32_t> dtable = OnDevice(c.table);
    dev::KvWrite(pool_, KvArgs(c, dk.data(), dv.data(), dpos.data(), dkc.data(), dvc.data(),
                               dpc.data(), c.table.empty() ? nullptr : dtable.data()));
    EXPECT_EQ(ToHostVector(dkc), run.want.k);
    EXPECT_EQ(ToHostVector(dvc), run.want.v);
    EXPECT_EQ(ToHostVector(dpc), run.want.pos);
  }
}

}  // namespace
}  // namespace cuda
}  // namespace g4
