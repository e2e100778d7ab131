// What the CUDA backend knows about the GPU it runs on: read from the live device
// (cudaGetDeviceProperties) by QueryDevice, or written down for a known card in tests. The struct
// is plain C++ so the device policy (policy.h) can be computed and tested without a GPU.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"

namespace g4::cuda {

struct DeviceInfo {
  std::string name;                    // "NVIDIA H200"
  int cc_major = 0, cc_minor = 0;      // compute capability, e.g. 7.5 (Turing), 9.0 (Hopper)
  int sm_count = 0;
  int64_t global_mem_bytes = 0;
  int64_t smem_per_block = 0;          // without opt-in: 48 KiB on every card since Volta
  int64_t smem_per_block_optin = 0;    // with cudaFuncAttributeMaxDynamicSharedMemorySize
  int64_t smem_per_sm = 0;
  int64_t l2_bytes = 0;
  int64_t memory_clock_khz = 0;        // peak; 0 when unknown
  int memory_bus_width_bits = 0;

  // 10 * major + minor: 75, 80, 86, 89, 90.
  int cc() const { return cc_major * 10 + cc_minor; }
  // Theoretical HBM/GDDR bandwidth in bytes/s (double data rate): 2 * clock * bus width / 8.
  // 0 when the clock or width is unknown.
  double TheoreticalBandwidth() const {
    return 2.0 * static_cast<double>(memory_clock_khz) * 1e3 *
           static_cast<double>(memory_bus_width_bits) / 8.0;
  }
};

// Number of usable CUDA devices. 0 (not an error) when there is no driver or no device: a
// machine without a GPU is an ordinary case, and cudaGetDeviceCount's error for it is mapped here.
int DeviceCount();

// Properties of device `ordinal`. Unavailable ("no CUDA device: ...") when there is none, with
// the CUDA runtime's reason; never a crash.
StatusOr<DeviceInfo> QueryDevice(int ordinal = 0);

}  // namespace g4::cuda
