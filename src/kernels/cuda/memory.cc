// DeviceMemory (kernels.h): g4::Memory on the CUDA device, where a kCuda Backend's activations
// and KV caches live. cudaMalloc'd (never managed memory). Every transfer is on the ops' stream
// (the open DeviceContext's stream(), non-blocking: it does not order with the legacy stream,
// so no cudaMemcpy here). Download is a copy there and a wait, so it waits for every op queued
// before it and reports their failure; Copy (device to device) is queued. Small uploads (token
// ids, positions, a ring's slot positions: several per step) are queued too, through a pinned
// staging buffer: a copy from pageable memory would first wait for every queued op, draining
// the device several times per step. Once the device failed (the context's sticky error) every
// transfer returns that error, as it does when no device is open. While a graph is captured
// only Copy is recorded: Alloc, Free, Upload and Download fail the capture
// (DeviceContext::CaptureRefuses) and do nothing, except that a Free is done when the capture
// has ended (at the next Alloc / Free / transfer after it).
#include <cuda_runtime.h>

#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/cuda/device_context.h"
#include "kernels/cuda/kernels.h"
#include "ops/memory.h"

namespace g4::cuda {
namespace {

class DeviceMemoryImpl final : public Memory {
 public:
  const char* name() const override { return "cuda"; }
  bool is_device() const override { return true; }

  void* Alloc(size_t bytes) override {
    DeviceContext* dc = ActiveDevice();
    if (dc == nullptr) return nullptr;
    if (dc->CaptureRefuses("a device allocation (cudaMalloc) of " + std::to_string(bytes) +
                           " bytes")) {
      return nullptr;
    }
    FreeDeferred(dc);
    // A launch error pending from an op belongs to that op: record it before a failed
    // cudaMalloc's error (cleared below) could be mistaken for it or hide it.
    if (!dc->Ok(cudaPeekAtLastError(), "an op before an allocation")) return nullptr;
    void* p = nullptr;
    if (cudaMalloc(&p, bytes > 0 ? bytes : 1) != cudaSuccess) {
      // Out of memory is the caller's to report (Buffer says how many bytes); it must not
      // poison the device, so the runtime's last error is cleared rather than recorded.
      (void)cudaGetLastError();
      return nullptr;
    }
    return p;
  }

  void Free(void* p) override {
    if (p == nullptr) return;
    // cudaFree cannot be recorded (it waits for the device): freed after the capture. Without
    // an open device (its last owner ended first) the memory is freed all the same.
    DeviceContext* dc = DeviceContext::Current();
    if (dc != nullptr && dc->CaptureRefuses("a device free (cudaFree)")) {
      std::lock_guard<std::mutex> lock(mu_);
      deferred_.push_back(p);
      return;
    }
    FreeDeferred(dc);
    // After a device failure cudaFree may return that failure again; it is already recorded.
    (void)cudaFree(p);
  }

  Status Upload(void* dst, const void* host_src, size_t bytes) override {
    DeviceContext* dc = ActiveDevice();
    if (dc == nullptr) return LastError();
    // A recorded copy would read the host buffer as it is at each launch: refresh inputs by
    // uploads between launches, not during the capture.
    if (dc->CaptureRefuses("an upload of " + std::to_string(bytes) + " bytes")) {
      return Refused("Upload");
    }
    FreeDeferred(dc);
    if (bytes == 0) return Status();
    if (bytes <= kStageHalf && Staged(dc, dst, host_src, bytes)) return Status();
    if (dc->failed() || !dc->ToDevice(dst, host_src, bytes)) return LastError();
    return Status();
  }

  Status Download(void* host_dst, const void* src, size_t bytes) override {
    DeviceContext* dc = ActiveDevice();
    if (dc == nullptr) return LastError();
    if (dc->CaptureRefuses("a download of " + std::to_string(bytes) + " bytes")) {
      return Refused("Download");
    }
    FreeDeferred(dc);
    // A failed launch is not seen by the copy: check the ops queued since the last check.
    if (!dc->Launched("an op before a download")) return LastError();
    if (bytes == 0) return Status();
    // Waits for the queued ops: an asynchronous fault in one of them is returned here.
    if (!dc->ToHost(host_dst, src, bytes)) return LastError();
    return Status();
  }

  // Queues the upload from the pinned staging buffer, which has two halves: one fills while
  // the copies from the other may still be queued; a half is refilled only after the event
  // recorded when it was left has completed. False (nothing done, or the failure recorded)
  // when there is no pinned buffer or a call failed: the caller then copies synchronously.
  bool Staged(DeviceContext* dc, void* dst, const void* src, size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    if (stage_ == nullptr) {
      if (stage_failed_) return false;
      if (cudaMallocHost(reinterpret_cast<void**>(&stage_), 2 * kStageHalf) != cudaSuccess ||
          cudaEventCreate(&left_[0]) != cudaSuccess || cudaEventCreate(&left_[1]) != cudaSuccess) {
        (void)cudaGetLastError();  // no pinned memory: synchronous uploads, not a device failure
        stage_ = nullptr;
        stage_failed_ = true;
        return false;
      }
    }
    if (used_ + bytes > kStageHalf) {
      if (!dc->Ok(cudaEventRecord(left_[half_], dc->stream()), "staging event") ||
          !dc->Ok(cudaEventSynchronize(left_[half_ ^ 1]), "staging event wait")) {
        return false;
      }
      half_ ^= 1;
      used_ = 0;
    }
    char* slot = stage_ + half_ * kStageHalf + used_;
    std::memcpy(slot, src, bytes);
    used_ += (bytes + 255) / 256 * 256;
    return dc->Ok(cudaMemcpyAsync(dst, slot, bytes, cudaMemcpyHostToDevice, dc->stream()),
                  "upload to device memory");
  }

  Status Copy(void* dst, const void* src, size_t bytes) override {
    DeviceContext* dc = ActiveDevice();
    if (dc == nullptr) return LastError();
    if (bytes == 0) return Status();
    if (!dc->Ok(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, dc->stream()),
                "copy within device memory")) {
      return dc->capturing() ? Refused("Copy") : LastError();
    }
    return Status();
  }

 private:
  static constexpr size_t kStageHalf = size_t{1} << 20;

  static Status Refused(const char* what) {
    return FailedPrecondition(std::string("DeviceMemory().") + what +
                              " during a CUDA graph capture (EndCapture fails)");
  }

  // Frees what Free was asked for during a capture, once it has ended. dc: the open context,
  // or nullptr.
  void FreeDeferred(const DeviceContext* dc) {
    if (dc != nullptr && dc->capturing()) return;
    std::vector<void*> ps;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (deferred_.empty()) return;
      ps.swap(deferred_);
    }
    for (void* p : ps) (void)cudaFree(p);
  }

  std::mutex mu_;
  char* stage_ = nullptr;  // 2 * kStageHalf pinned bytes, allocated on the first small upload
  bool stage_failed_ = false;
  cudaEvent_t left_[2] = {};
  int half_ = 0;
  size_t used_ = 0;
  std::vector<void*> deferred_;  // Free during a capture: freed after it
};

}  // namespace

Memory& DeviceMemory() {
  static DeviceMemoryImpl* memory = new DeviceMemoryImpl;  // never destroyed, as HostMemory()
  return *memory;
}

}  // namespace g4::cuda
