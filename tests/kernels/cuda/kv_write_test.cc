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
using g4::testing::KvCaches;
using g4::testing::KvCases;
using g4::testing::KvExpected;
using g4::testing::KvInitial;
using g4::testing::RandomFloats;

class CudaKvWriteTest : public CudaOpTest {};

TEST_F(CudaKvWriteTest, OnDevicePointersMatchTheContract) {
  uint32_t seed = 700;
  for (const KvCase& c : KvCases()) {
    SCOPED_TRACE(c.name);
    const int64_t C = static_cast<int64_t>(c.pos.size());
    const std::vector<float> k = RandomFloats(C * c.row, ++seed);
    const std::vector<float> v = RandomFloats(C * c.row, ++seed);
    const KvCaches start = KvInitial(c, ++seed);
    KvCaches want = start;
    KvExpected(c, k, v, &want);

    // On DeviceMemory, every pointer a device pointer (the kCuda op).
    Buffer<float> dk = OnDevice(k), dv = OnDevice(v), dkc = OnDevice(start.k),
                  dvc = OnDevice(start.v);
    Buffer<int32_t> dpos = OnDevice(c.pos), dpc = OnDevice(start.pos);
    KvWriteArgs a;
    a.k = dk.data(), a.v = dv.data(), a.pos = dpos.data();
    a.C = C, a.row = c.row, a.window = c.window, a.capacity = c.capacity;
    a.k_cache = dkc.data(), a.v_cache = dvc.data(), a.pos_cache = dpc.data();
    dev::KvWrite(pool_, a);
    EXPECT_EQ(ToHostVector(dkc), want.k);
    EXPECT_EQ(ToHostVector(dvc), want.v);
    EXPECT_EQ(ToHostVector(dpc), want.pos);

  }
}

}  // namespace
}  // namespace cuda
}  // namespace g4
