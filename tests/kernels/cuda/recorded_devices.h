// Device descriptions of four real cards, as cudaGetDeviceProperties reports them (totalGlobalMem,
// sharedMemPerBlock / PerBlockOptin / PerMultiprocessor, l2CacheSize, memory clock and bus width),
// for the host-side tests of the device policy and the tile choice: no GPU needed. The device
// limits the kernels plan with come from these through LimitsOf (policy.h), never written twice.
#pragma once

#include <string>

#include "kernels/cuda/device.h"

namespace g4::cuda::testing {

inline constexpr int64_t kKiB = 1024, kMiB = 1024 * kKiB;

// One recorded card. sharedMemPerBlock (without opt-in) is 48 KiB on all four.
inline DeviceInfo RecordedCard(std::string name, int cc_major, int cc_minor, int sm_count,
                               int64_t global_mem_bytes, int64_t smem_optin_kib,
                               int64_t smem_per_sm_kib, int64_t l2_mib, int64_t memory_clock_khz,
                               int memory_bus_width_bits) {
  DeviceInfo d;
  d.name = std::move(name);
  d.cc_major = cc_major, d.cc_minor = cc_minor;
  d.sm_count = sm_count;
  d.global_mem_bytes = global_mem_bytes;
  d.smem_per_block = 48 * kKiB;
  d.smem_per_block_optin = smem_optin_kib * kKiB;
  d.smem_per_sm = smem_per_sm_kib * kKiB;
  d.l2_bytes = l2_mib * kMiB;
  d.memory_clock_khz = memory_clock_khz;
  d.memory_bus_width_bits = memory_bus_width_bits;
  return d;
}

// Columns: name, compute capability, SMs, global memory bytes, shared memory per block with
// opt-in (KiB), per SM (KiB), L2 (MiB), memory clock (kHz), bus width (bits).
// 16 GB GDDR6 (~14.7 GiB usable), 320 GB/s.
inline DeviceInfo TeslaT4() {
  return RecordedCard("Tesla T4", 7, 5, 40, 15835398144, 64, 64, 4, 5001000, 256);
}
// 300 GB/s.
inline DeviceInfo NvidiaL4() {
  return RecordedCard("NVIDIA L4", 8, 9, 58, 23580639232, 99, 100, 48, 6251000, 192);
}
// 1555 GB/s.
inline DeviceInfo A100_40GB() {
  return RecordedCard("NVIDIA A100-SXM4-40GB", 8, 0, 108, 42505273344, 163, 164, 40, 1215000, 5120);
}
// 141 GB HBM3e; ~4.9 TB/s theoretical (4.8 TB/s marketed).
inline DeviceInfo H200() {
  return RecordedCard("NVIDIA H200", 9, 0, 132, 150754820096, 227, 228, 50, 3201000, 6144);
}

}  // namespace g4::cuda::testing
