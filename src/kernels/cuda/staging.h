// The device state behind the host-pointer op functions (kernels.h): the chosen device and
// policy, grow-only scratch buffers for activations, the weight cache, and the sticky error.
// Internal to src/kernels/cuda. One Backend drives it from one thread at a time (as the CPU
// backend's pool); the weight cache is locked anyway, it is cheap next to a copy.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "core/status.h"
#include "core/tensor.h"
#include "kernels/cuda/policy.h"
#include "kernels/cuda/tiles.h"

namespace g4::cuda::staging {

// Initializes device 0 on first use. False (and the error recorded) when there is no device.
bool Ready();
const DevicePolicy& Policy();
const DeviceLimits& Limits();
cudaStream_t Stream();

// Records the first failure (logged once); false when `e` / `s` is an error, or an earlier
// failure is already recorded (the device may be unusable after one).
bool Ok(cudaError_t e, const char* what);
bool Ok(const Status& s, const char* what);
bool Failed();

// Scratch buffer `slot` (0..kSlots-1) with room for at least `bytes`; nullptr after a failure.
inline constexpr int kSlots = 8;
void* Scratch(int slot, size_t bytes);
inline float* ScratchF(int slot, int64_t n) {
  return static_cast<float*>(Scratch(slot, static_cast<size_t>(n) * sizeof(float)));
}
// Synchronous copies on Stream(); false after a failure.
bool ToDevice(void* dst, const void* src, size_t bytes);
bool ToHost(void* dst, const void* src, size_t bytes);
// Waits for Stream() and checks the kernels launched on it.
bool Sync(const char* what);

// The device copy of weight `w` (a view whose data / scales are device pointers), uploaded on
// first use; keyed by the host pointer, and uploaded anew when dtype, shape or a sampled
// fingerprint of the bytes differ (a new tensor in a freed buffer). convert_to_compute: bf16
// weights become f16 where the policy computes in f16 (SM 7.x); everything else (f32, f16,
// quantized) is uploaded as stored. nullptr on failure.
const TensorView* DeviceWeight(const TensorView& w, bool convert_to_compute);

// NaN into out[0, n): what an op writes when the device failed.
void FillNaN(float* out, int64_t n);

}  // namespace g4::cuda::staging
