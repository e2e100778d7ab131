// The CUDA device policy: what the backend does on a given GPU, decided once at start-up from
// the live device's description (device.h) and logged as the first line of every command:
//   backend=cuda device=NVIDIA_T4 cc=7.5 sms=40 mem=15.6GiB l2=4MiB smem=48KiB
//   smem_optin=64KiB compute=f16 gemm_tile=128x128x32x2 w4a16_tile=64x128x32x2 attn256=bc32
//   attn512=bc8 pdl=off
// Pure C++ (no CUDA headers), so the policy of any recorded card is unit-tested without a GPU
// (tests/kernels/cuda/policy_test.cc).
//
// Compute dtype: bf16 on SM >= 8.0; f16 on SM 7.5 (Turing has no bf16 tensor-core datapath, so
// bf16 weights are converted to f16 once, when they are uploaded, never per step). Below SM 7.5
// the device is refused.
#pragma once

#include <cstdint>
#include <string>

#include "core/dtype.h"
#include "core/status.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/tiles.h"

namespace g4::cuda {

inline constexpr int kMinComputeCapability = 75;
// The head dims of Gemma 4 (sliding 256, global 512); the policy plans attention for both.
inline constexpr int64_t kPolicyHeadDims[] = {256, 512};

struct DevicePolicy {
  DeviceInfo device;
  DType compute = DType::kBF16;  // kBF16 or kF16: the dtype matmul weights are uploaded as
  GemmTile gemm_tile;            // the tensor-core GEMM of 16-bit weights (prefill)
  W4A16Tile w4a16_tile;          // for int4 groups of `w4a16_group`
  int64_t w4a16_group = 0;
  AttentionPlan attention[2];    // for kPolicyHeadDims, in order
  bool pdl = false;              // programmatic dependent launch (SM 9.0 and up, launch.cuh)

  // "device=... cc=7.5 ... compute=f16 w4a16_tile=... attn256=... attn512=..." (no backend=).
  std::string ToString() const;
  const AttentionPlan* AttentionFor(int64_t head_dim) const;
};

DeviceLimits LimitsOf(const DeviceInfo& d);

// The policy for device `d` with W4A16 weights quantized in groups of `w4a16_group` (32 for
// g4's own checkpoints and compressed-tensors' default). InvalidArgument, naming the device, when
// its compute capability is below 7.5, or when no GEMM tile, W4A16 tile or attention plan fits
// its shared memory (the message carries "required = N ..., available = M").
StatusOr<DevicePolicy> ChoosePolicy(const DeviceInfo& d, int64_t w4a16_group = 32);

// Byte counts for policy lines: "64KiB", "50MiB", "139.8GiB".
std::string FormatBytes(int64_t bytes);

}  // namespace g4::cuda
