// Kernel launches with programmatic dependent launch (PDL) where the device has it (SM 9.0 and
// up: the policy's pdl). A recorded decode step is a chain of a few hundred dependent kernels;
// with PDL a kernel's blocks are scheduled while its predecessor finishes, instead of after the
// predecessor has drained and the next launch has gone through, which hides most of the gap
// between them. The contract every g4 kernel keeps: its first statement is GridDependency()
// (at most a PrefetchL2 comes before: a hint that changes no value any load sees), which waits
// (griddepcontrol.wait) until the previous kernel in the stream has completed and its writes
// are visible, then lets the next kernel be scheduled. So no kernel touches memory,
// and no grid completes, before its predecessor has completed: the order is the stream's, as
// without PDL. Below SM 9.0 both instructions are left out and launches are ordinary.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/launch.h"

namespace g4::cuda {

__device__ __forceinline__ void GridDependency() {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
  cudaGridDependencySynchronize();
  cudaTriggerProgrammaticLaunchCompletion();
#endif
}

// A hint that [p, p + bytes) of global memory is read soon: on SM 9.0 its 16-byte-aligned
// interior is streamed into L2 by the bulk copy engine (cp.async.bulk.prefetch: no registers,
// nothing to wait for), in pieces of at most 1 MiB. L2 is where every SM's writes meet, so a
// prefetch never makes a later load see older data. A GEMV issues it for its block's weight rows
// before GridDependency(): they stream in while the predecessor finishes. Elsewhere a no-op.
__device__ __forceinline__ void PrefetchL2(const void* p, int64_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (bytes < 16) return;
  const size_t a = __cvta_generic_to_global(p);
  size_t lo = (a + 15) & ~size_t{15};
  const size_t hi = (a + static_cast<size_t>(bytes)) & ~size_t{15};
  constexpr size_t kPiece = size_t{1} << 20;
  while (lo < hi) {
    const size_t n = hi - lo < kPiece ? hi - lo : kPiece;
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(lo),
                 "r"(static_cast<uint32_t>(n))
                 : "memory");
    lo += n;
  }
#else
  (void)p;
  (void)bytes;
#endif
}

// kernel<<<grid, block, smem, stream>>>(args...), with the PDL attribute when the policy has
// it (ProgrammaticLaunches). Errors are the launch's, read by cudaGetLastError as for <<<>>>.
template <typename... KArgs, typename... Args>
void LaunchKernel(void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem,
                  cudaStream_t stream, Args... args) {
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  cudaLaunchAttribute pdl[1];
  pdl[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  pdl[0].val.programmaticStreamSerializationAllowed = 1;
  if (ProgrammaticLaunches().load(std::memory_order_relaxed)) {
    config.attrs = pdl;
    config.numAttrs = 1;
  }
  (void)cudaLaunchKernelEx(&config, kernel, args...);
}

}  // namespace g4::cuda
