// The emulated "device" (run.sh, run_backend.sh): the CUDA runtime's device queries answered from
// a recorded card (recorded_devices.h), so device.cc, the policy and the kernels' plans and tile
// choices are those of that card. The card: env G4_EMU_CARD at run time (H200, T4, L4, A100, or
// "none" for a machine without a device), else -DG4_EMU_CARD at compile time, else H200.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "kernels/cuda/device.h"
#include "kernels/cuda/recorded_devices.h"

#ifndef G4_EMU_CARD
#define G4_EMU_CARD H200
#endif
#define G4_EMU_STR2(x) #x
#define G4_EMU_STR(x) G4_EMU_STR2(x)

namespace {

using g4::cuda::DeviceInfo;
namespace rec = g4::cuda::testing;

// nullptr: no device.
const DeviceInfo* Card() {
  static const DeviceInfo* card = [] () -> const DeviceInfo* {
    const char* env = std::getenv("G4_EMU_CARD");
    const std::string name = env != nullptr && *env != '\0' ? env : G4_EMU_STR(G4_EMU_CARD);
    DeviceInfo d;
    if (name == "H200") {
      d = rec::H200();
    } else if (name == "T4" || name == "TeslaT4") {
      d = rec::TeslaT4();
    } else if (name == "L4" || name == "NvidiaL4") {
      d = rec::NvidiaL4();
    } else if (name == "A100" || name == "A100_40GB") {
      d = rec::A100_40GB();
    } else if (name == "none") {
      std::fprintf(stderr, "[cuda emu] no device\n");
      return nullptr;
    } else {
      std::fprintf(stderr, "[cuda emu] unknown card '%s' (H200, T4, L4, A100, none)\n",
                   name.c_str());
      std::abort();
    }
    std::fprintf(stderr, "[cuda emu] emulating %s (cc %d.%d)\n", d.name.c_str(), d.cc_major,
                 d.cc_minor);
    return new DeviceInfo(d);
  }();
  return card;
}

}  // namespace

namespace emu {
size_t SmemPerBlock() { return Card() ? static_cast<size_t>(Card()->smem_per_block) : 0; }
size_t SmemPerBlockOptin() {
  return Card() ? static_cast<size_t>(Card()->smem_per_block_optin) : 0;
}
}  // namespace emu

cudaError_t cudaGetDeviceCount(int* n) {
  *n = 0;
  if (Card() == nullptr) return emu::Fail(cudaErrorNoDevice, "cudaGetDeviceCount: no device");
  *n = 1;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int ordinal) {
  if (Card() == nullptr || ordinal != 0) {
    return emu::Fail(cudaErrorInvalidDevice, "cudaGetDeviceProperties: no such device");
  }
  const DeviceInfo& d = *Card();
  std::memset(p, 0, sizeof(*p));
  std::snprintf(p->name, sizeof(p->name), "%s", d.name.c_str());
  p->major = d.cc_major;
  p->minor = d.cc_minor;
  p->multiProcessorCount = d.sm_count;
  p->totalGlobalMem = static_cast<size_t>(d.global_mem_bytes);
  p->sharedMemPerBlock = static_cast<size_t>(d.smem_per_block);
  p->sharedMemPerBlockOptin = static_cast<size_t>(d.smem_per_block_optin);
  p->sharedMemPerMultiprocessor = static_cast<size_t>(d.smem_per_sm);
  p->l2CacheSize = static_cast<int>(d.l2_bytes);
  p->memoryBusWidth = d.memory_bus_width_bits;
  p->maxThreadsPerBlock = 1024;
  p->warpSize = 32;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* v, cudaDeviceAttr a, int ordinal) {
  if (Card() == nullptr || ordinal != 0 || a != cudaDevAttrMemoryClockRate) {
    return emu::Fail(cudaErrorInvalidValue, "cudaDeviceGetAttribute: not emulated");
  }
  *v = static_cast<int>(Card()->memory_clock_khz);
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int ordinal) {
  if (Card() == nullptr || ordinal != 0) {
    return emu::Fail(cudaErrorInvalidDevice, "cudaSetDevice: no such device");
  }
  return cudaSuccess;
}
