// The device state behind the op functions (kernels.h): the chosen device and policy, the
// weight cache, the sticky error, grow-only device scratch buffers for the staged (host-pointer)
// wrappers and host scratch buffers for the ops that fall back to the CPU kernels. Internal to
// src/kernels/cuda. One Backend drives it from one thread at a time (as the CPU backend's pool);
// the weight cache is locked anyway (an uncontended lock, no device work).
//
// Every device call goes to Stream(), one non-blocking stream made at Init: stream capture
// (CUDA graphs, graph.cc) is illegal on the legacy default stream, and a non-blocking stream
// does not order with legacy-stream calls, so nothing here uses the legacy stream. While a
// capture is in progress (Capturing()), whatever a graph cannot record (host copies, syncs,
// allocations, host fallbacks) is refused by CaptureRefuses: the first reason is kept for
// EndCapture, the work is skipped, and the sticky error is not touched.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

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
// Device counters of the kernels whose last block finishes the work (made zero at Init; each
// launch leaves its counters zero). One set suffices: every op runs on Stream(), one kernel
// after another. The GEMV with a ResidualNorm tail (GemvResidual, matmul.h) takes one; split
// attention (attention.h) the other kDeviceCounters - 1, one per (KV head, query tile).
inline constexpr int64_t kDeviceCounters = 4096;
unsigned* GemvCounter();
unsigned* AttentionCounters();

// Records the first failure (logged once); false when `e` / `s` is an error, or an earlier
// failure is already recorded (the device may be unusable after one). While capturing, an error
// is the capture's failure (EndCapture reports it), not the device's.
bool Ok(cudaError_t e, const char* what);
bool Ok(const Status& s, const char* what);
bool Failed();

// Device scratch buffer `slot` (0..kSlots-1) with room for at least `bytes`; nullptr after a
// failure, and when it would have to grow while capturing. Only the staged wrappers
// (staged_ops.cc) use these: the cuda::dev ops never do, so a wrapper can hand its scratch
// buffers to them.
inline constexpr int kSlots = 8;
void* Scratch(int slot, size_t bytes);
inline float* ScratchF(int slot, int64_t n) {
  return static_cast<float*>(Scratch(slot, static_cast<size_t>(n) * sizeof(float)));
}
// The device workspace of the cuda::dev ops that need one (Moe: routing tables and the experts'
// activations), grow-only like Scratch but apart from the staged wrappers' slots, so a wrapper
// may call such an op on its scratch. nullptr after a failure and when it would have to grow
// while capturing (a decode step run once before its capture has sized it).
void* OpWorkspace(size_t bytes);
// Host buffer `slot` (0..kSlots-1, per thread, grow-only) with room for `bytes`: the host
// copies of device inputs for an op the device kernels do not define.
void* HostScratch(int slot, size_t bytes);
template <typename T>
T* HostScratchOf(int slot, int64_t n) {
  return static_cast<T*>(HostScratch(slot, static_cast<size_t>(n) * sizeof(T)));
}
// Whether a graph capture is in progress (graph.cc).
bool Capturing();
// While capturing: records `why` as the capture's failure (the first one is kept) and returns
// true, so the caller skips work a graph cannot record. False (nothing done) otherwise.
bool CaptureRefuses(const std::string& why);
// graph.cc's side of the capture state: started / ended, and the failure recorded meanwhile.
void SetCapturing(bool on);
std::string TakeCaptureFailure();

// Synchronous copies on Stream() (cudaMemcpyAsync, then a stream synchronize: ToHost waits for
// the kernels queued before it); false after a failure, and refused while capturing.
bool ToDevice(void* dst, const void* src, size_t bytes);
bool ToHost(void* dst, const void* src, size_t bytes);
// Waits for Stream() and checks the kernels launched on it (refused while capturing).
bool Sync(const char* what);
// Checks the launches since the last check without waiting (cudaGetLastError): what a cuda::dev
// op calls after its launches, so a bad launch is recorded and named by its op.
bool Launched(const char* what);

// The device copy of weight `w` (a view whose data / scales are device pointers), uploaded on
// first use; keyed by the host pointer, and uploaded anew when dtype, shape or byte size differ.
// The bytes are never looked at: a new tensor at a freed address needs ReleaseDeviceMemory
// between (kernels.h). convert_to_compute: bf16 weights become f16 where the policy computes in
// f16 (SM 7.x); everything else (f32, f16, quantized) is uploaded as stored. nullptr on failure,
// and for a weight not yet uploaded while capturing (a capture cannot record the upload).
const TensorView* DeviceWeight(const TensorView& w, bool convert_to_compute);

// NaN into host out[0, n): what a staged wrapper writes when the device failed.
void FillNaN(float* out, int64_t n);

}  // namespace g4::cuda::staging
