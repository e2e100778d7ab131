// Device memory bandwidth probe for scripts/device-check.sh: the decode roofline of the CUDA
// backend is HBM bandwidth, so the script measures it in the same run as the model benchmarks.
// Prints the device policy line, the theoretical bandwidth (2 * memory clock * bus width) and
// the median of timed device-to-device cudaMemcpy of a buffer far larger than L2, counted as
// read + write bytes. Usage: g4_cuda_bandwidth [MiB per buffer, default 1024]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kernels/cuda/device.h"
#include "kernels/cuda/policy.h"

int main(int argc, char** argv) {
  const size_t mib = argc > 1 ? static_cast<size_t>(std::strtoul(argv[1], nullptr, 10)) : 1024;
  auto info = g4::cuda::QueryDevice(0);
  if (!info.ok()) {
    std::fprintf(stderr, "g4: %s\n", info.status().ToString().c_str());
    return 2;
  }
  auto policy = g4::cuda::ChoosePolicy(*info);
  if (policy.ok()) std::printf("policy: %s\n", policy->ToString().c_str());
  const size_t bytes = mib << 20;
  void *a = nullptr, *b = nullptr;
  if (cudaMalloc(&a, bytes) != cudaSuccess || cudaMalloc(&b, bytes) != cudaSuccess) {
    std::fprintf(stderr, "g4: cudaMalloc of 2 x %zu MiB failed\n", mib);
    return 1;
  }
  cudaMemset(a, 1, bytes);
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice);  // warm-up
  std::vector<double> gbs;
  for (int i = 0; i < 9; ++i) {
    cudaEventRecord(start);
    cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice);
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float ms = 0.0f;
    cudaEventElapsedTime(&ms, start, stop);
    gbs.push_back(2.0 * static_cast<double>(bytes) / (ms * 1e-3) / 1e9);
  }
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) {
    std::fprintf(stderr, "g4: %s\n", cudaGetErrorString(e));
    return 1;
  }
  std::sort(gbs.begin(), gbs.end());
  std::printf("theoretical_gbs=%.1f copy_gbs=%.1f (median of 9 copies of %zu MiB, read+write)\n",
              info->TheoreticalBandwidth() / 1e9, gbs[gbs.size() / 2], mib);
  cudaFree(a);
  cudaFree(b);
  return 0;
}
