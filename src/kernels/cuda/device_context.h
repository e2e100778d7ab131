// The CUDA device context: what the ops of this directory run on. One object per open device:
// its policy and limits, the one stream every op and copy goes to, the device counters, the
// weight cache, the ops' workspace, the sticky error and the graph-capture state. A kCuda
// Backend owns it (a shared reference from DeviceContext::Open, as tests' fixtures do); it is
// closed when its last owner lets go: the stream is drained and destroyed, the cached weights,
// the workspace and the counters freed. Internal to src/kernels/cuda and its tests.
//
// The home rule of every device entry point (the cuda::dev ops, DeviceMemory's transfers,
// graphs): it starts with `DeviceContext* dc = ActiveDevice();` and does nothing when that is
// null (no device open, or it failed: the failure is recorded and surfaces at the next
// DeviceMemory().Download), issues its work on dc->stream() and checks its launches with
// dc->Launched(name). The op table's signatures are shared with the ref and CPU kernels, so the
// ops find the context this way, not as an argument (CTranslate2 keeps its current device the
// same way).
//
// Every device call goes to stream(), made non-blocking at Open: stream capture (CUDA graphs,
// graph.cc) is illegal on the legacy default stream, and a non-blocking stream does not order
// with legacy-stream calls, so nothing here uses the legacy stream. While a capture is in
// progress (capturing()), whatever a graph cannot record (host copies, syncs, allocations, host
// fallbacks) is refused by CaptureRefuses: the first reason is kept for EndCapture, the work is
// skipped, and the sticky error is not touched. One Backend drives a context from one thread at
// a time (as the CPU backend's pool); the weight cache is locked anyway (uncontended).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "kernels/cuda/policy.h"
#include "kernels/cuda/tiles.h"

namespace g4::cuda {

class DeviceContext : public std::enable_shared_from_this<DeviceContext> {
 public:
  // Device `ordinal`'s context: the one already open, or a new one (its policy chosen from the
  // live device, policy.h; its stream and counters made). Unavailable without a device or
  // driver; the policy's refusal for an unsupported card. One device is open at a time.
  static StatusOr<std::shared_ptr<DeviceContext>> Open(int ordinal = 0);
  // The open context, or nullptr.
  static DeviceContext* Current();
  // Why the last Open failed (OK when none did or one has opened since).
  static Status LastOpenFailure();

  ~DeviceContext();
  DeviceContext(const DeviceContext&) = delete;
  DeviceContext& operator=(const DeviceContext&) = delete;

  int ordinal() const { return ordinal_; }
  const DevicePolicy& policy() const { return policy_; }
  const DeviceLimits& limits() const { return limits_; }
  cudaStream_t stream() const { return stream_; }

  // Device counters of the kernels whose last block finishes the work (zero at Open; each
  // launch leaves its counters zero). One set suffices: every op runs on stream(), one kernel
  // after another. The GEMV with a ResidualNorm tail (GemvResidual, matmul.h) takes one; split
  // attention (attention.h) the other kCounters - 1, one per (KV head, query tile).
  static constexpr int64_t kCounters = 4096;
  unsigned* gemv_counter() const { return counters_; }
  unsigned* attention_counters() const { return counters_ + 1; }

  // The first failure (logged once), sticky: later ops do nothing, transfers return it.
  const Status& error() const { return error_; }
  bool failed() const { return !error_.ok(); }
  // False when `e` / `s` is an error (recorded, unless a capture takes it as its failure) or an
  // earlier failure is recorded (the device may be unusable after one).
  bool Ok(cudaError_t e, const char* what);
  bool Ok(const Status& s, const char* what);

  // Synchronous copies on stream() (cudaMemcpyAsync, then a stream synchronize: ToHost waits for
  // the kernels queued before it); false after a failure, and refused while capturing.
  bool ToDevice(void* dst, const void* src, size_t bytes);
  bool ToHost(void* dst, const void* src, size_t bytes);
  // Waits for stream() and checks the kernels launched on it (refused while capturing).
  bool Sync(const char* what);
  // Checks the launches since the last check without waiting (cudaGetLastError): what an op
  // calls after its launches, so a bad launch is recorded and named by its op.
  bool Launched(const char* what);

  // The device workspace of the ops that need one (Moe: routing tables and the experts'
  // activations), grow-only. nullptr after a failure and when it would have to grow while
  // capturing (a decode step run once before its capture has sized it).
  void* Workspace(size_t bytes);

  // The device copy of weight `w` (a view whose data / scales are device pointers), uploaded on
  // first use; keyed by the host pointer, and uploaded anew when dtype, shape or byte size
  // differ. The bytes are never looked at: a new tensor at a freed address needs ReleaseWeights
  // between (kernels.h). convert_to_compute: bf16 weights become f16 where the policy computes
  // in f16 (SM 7.x); everything else (f32, f16, quantized) is uploaded as stored. nullptr on
  // failure, and for a weight not yet uploaded while capturing (a capture cannot record it).
  const TensorView* DeviceWeight(const TensorView& w, bool convert_to_compute);
  // Frees the cached weights and the workspace (refused while capturing).
  void ReleaseWeights();
  int64_t cached_weight_bytes() const { return weight_bytes_; }

  // Graph capture (graph.cc): whether one is in progress; while it is, CaptureRefuses records
  // `why` as its failure (the first one is kept) and returns true, so the caller skips work a
  // graph cannot record. False (nothing done) otherwise.
  bool capturing() const { return capturing_; }
  bool CaptureRefuses(const std::string& why);
  void SetCapturing(bool on);
  std::string TakeCaptureFailure() { return std::move(capture_failure_); }

 private:
  struct CachedWeight {
    DType host_dtype = DType::kF32;
    std::vector<int64_t> host_shape;
    size_t host_bytes = 0;  // nbytes() of the host tensor
    void* data = nullptr;
    void* scales = nullptr;
    size_t bytes = 0;
    TensorView view;  // the device copy
  };
  DeviceContext() = default;
  void Record(Status s);
  void Free(CachedWeight& w);

  int ordinal_ = -1;
  DevicePolicy policy_;
  DeviceLimits limits_;
  Status error_;
  cudaStream_t stream_ = nullptr;
  unsigned* counters_ = nullptr;  // kCounters, zeroed at Open
  bool capturing_ = false;
  std::string capture_failure_;  // the first thing the capture could not record
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  std::mutex mu_;  // the weight cache
  // Key: (host data pointer, converted to compute dtype).
  std::map<std::pair<const void*, bool>, CachedWeight> weights_;
  int64_t weight_bytes_ = 0;
};

// The context a device entry point runs on (the home rule above): the open one unless it failed.
inline DeviceContext* ActiveDevice() {
  DeviceContext* dc = DeviceContext::Current();
  return dc != nullptr && !dc->failed() ? dc : nullptr;
}

// Host buffer `slot` (0..kHostSlots-1, per thread, grow-only) with room for `bytes`: the host
// copies of device inputs for an op the device kernels do not define.
inline constexpr int kHostSlots = 8;
void* HostScratch(int slot, size_t bytes);
template <typename T>
T* HostScratchOf(int slot, int64_t n) {
  return static_cast<T*>(HostScratch(slot, static_cast<size_t>(n) * sizeof(T)));
}

}  // namespace g4::cuda
