// Device descriptions of four real cards, as cudaGetDeviceProperties reports them (totalGlobalMem,
// sharedMemPerBlock / PerBlockOptin / PerMultiprocessor, l2CacheSize, memory clock and bus width),
// for the host-side tests of the device policy and the tile choice: no GPU needed.
#pragma once

#include "kernels/cuda/device.h"

namespace g4::cuda::testing {

inline constexpr int64_t kKiB = 1024, kMiB = 1024 * kKiB;

inline DeviceInfo TeslaT4() {
  DeviceInfo d;
  d.name = "Tesla T4";
  d.cc_major = 7, d.cc_minor = 5;
  d.sm_count = 40;
  d.global_mem_bytes = 15835398144;  // 16 GB GDDR6, ~14.7 GiB usable
  d.smem_per_block = 48 * kKiB;
  d.smem_per_block_optin = 64 * kKiB;
  d.smem_per_sm = 64 * kKiB;
  d.l2_bytes = 4 * kMiB;
  d.memory_clock_khz = 5001000;
  d.memory_bus_width_bits = 256;  // 320 GB/s
  return d;
}

inline DeviceInfo NvidiaL4() {
  DeviceInfo d;
  d.name = "NVIDIA L4";
  d.cc_major = 8, d.cc_minor = 9;
  d.sm_count = 58;
  d.global_mem_bytes = 23580639232;
  d.smem_per_block = 48 * kKiB;
  d.smem_per_block_optin = 99 * kKiB;
  d.smem_per_sm = 100 * kKiB;
  d.l2_bytes = 48 * kMiB;
  d.memory_clock_khz = 6251000;
  d.memory_bus_width_bits = 192;  // 300 GB/s
  return d;
}

inline DeviceInfo A100_40GB() {
  DeviceInfo d;
  d.name = "NVIDIA A100-SXM4-40GB";
  d.cc_major = 8, d.cc_minor = 0;
  d.sm_count = 108;
  d.global_mem_bytes = 42505273344;
  d.smem_per_block = 48 * kKiB;
  d.smem_per_block_optin = 163 * kKiB;
  d.smem_per_sm = 164 * kKiB;
  d.l2_bytes = 40 * kMiB;
  d.memory_clock_khz = 1215000;
  d.memory_bus_width_bits = 5120;  // 1555 GB/s
  return d;
}

inline DeviceInfo H200() {
  DeviceInfo d;
  d.name = "NVIDIA H200";
  d.cc_major = 9, d.cc_minor = 0;
  d.sm_count = 132;
  d.global_mem_bytes = 150754820096;  // 141 GB HBM3e
  d.smem_per_block = 48 * kKiB;
  d.smem_per_block_optin = 227 * kKiB;
  d.smem_per_sm = 228 * kKiB;
  d.l2_bytes = 50 * kMiB;
  d.memory_clock_khz = 3201000;
  d.memory_bus_width_bits = 6144;  // ~4.9 TB/s theoretical (4.8 TB/s marketed)
  return d;
}

}  // namespace g4::cuda::testing
