#include "kernels/cuda/device.h"

#include <cuda_runtime.h>

#include <string>

namespace g4::cuda {
namespace {

// cudaGetDeviceCount's error when the machine has no GPU or no driver
// (cudaErrorNoDevice, cudaErrorInsufficientDriver, ...), as a sentence.
std::string CountError(cudaError_t e) {
  return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
}

}  // namespace

int DeviceCount() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();  // clear it so later calls do not report it again
    return 0;
  }
  return n;
}

StatusOr<DeviceInfo> QueryDevice(int ordinal) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return Unavailable("no CUDA device: " + CountError(e));
  }
  if (n == 0) return Unavailable("no CUDA device: the driver reports 0 devices");
  if (ordinal < 0 || ordinal >= n) {
    return InvalidArgument("CUDA device " + std::to_string(ordinal) + " does not exist (" +
                           std::to_string(n) + " present)");
  }
  cudaDeviceProp p{};
  if (cudaError_t pe = cudaGetDeviceProperties(&p, ordinal); pe != cudaSuccess) {
    return Unavailable("cudaGetDeviceProperties(" + std::to_string(ordinal) +
                       "): " + CountError(pe));
  }
  DeviceInfo d;
  d.name = p.name;
  d.cc_major = p.major;
  d.cc_minor = p.minor;
  d.sm_count = p.multiProcessorCount;
  d.global_mem_bytes = static_cast<int64_t>(p.totalGlobalMem);
  d.smem_per_block = static_cast<int64_t>(p.sharedMemPerBlock);
  d.smem_per_block_optin = static_cast<int64_t>(p.sharedMemPerBlockOptin);
  d.smem_per_sm = static_cast<int64_t>(p.sharedMemPerMultiprocessor);
  d.l2_bytes = p.l2CacheSize;
  d.memory_bus_width_bits = p.memoryBusWidth;
  // CUDA 13 dropped memoryClockRate from cudaDeviceProp; the attribute remains.
  int clock_khz = 0;
  if (cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, ordinal) == cudaSuccess) {
    d.memory_clock_khz = clock_khz;
  } else {
    (void)cudaGetLastError();
  }
  return d;
}

}  // namespace g4::cuda
