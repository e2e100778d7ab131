// Kernel launches with programmatic dependent launch (PDL) where the device has it (SM 9.0 and
// up: the policy's pdl). A recorded decode step is a chain of a few hundred dependent kernels;
// with PDL a kernel's blocks are scheduled while its predecessor finishes, instead of after the
// predecessor has drained and the next launch has gone through, which hides most of the gap
// between them. The contract every g4 kernel keeps: its first statement is GridDependency(),
// which waits (griddepcontrol.wait) until the previous kernel in the stream has completed and
// its writes are visible, then lets the next kernel be scheduled. So no kernel touches memory,
// and no grid completes, before its predecessor has completed: the order is the stream's, as
// without PDL. Below SM 9.0 both instructions are left out and launches are ordinary.
#pragma once

#include <cuda_runtime.h>

#include "kernels/cuda/launch.h"

namespace g4::cuda {

__device__ __forceinline__ void GridDependency() {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
  cudaGridDependencySynchronize();
  cudaTriggerProgrammaticLaunchCompletion();
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
