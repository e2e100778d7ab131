// DeviceMemory (kernels.h): g4::Memory on the CUDA device, where a kCuda Backend's activations
// and KV caches live. cudaMalloc'd (never managed memory); Upload and Download are synchronous
// cudaMemcpy on the legacy default stream (staging::Stream()), so a Download waits for every op
// queued before it and reports their failure; Copy (device to device) is queued on that stream.
// Once the device failed (staging's sticky error) every transfer returns that error.
#include <cuda_runtime.h>

#include "kernels/cuda/kernels.h"
#include "kernels/cuda/staging.h"
#include "ops/memory.h"

namespace g4::cuda {
namespace {

class DeviceMemoryImpl final : public Memory {
 public:
  const char* name() const override { return "cuda"; }
  bool is_device() const override { return true; }

  void* Alloc(size_t bytes) override {
    if (!staging::Ready()) return nullptr;
    // A launch error pending from an op belongs to that op: record it before a failed
    // cudaMalloc's error (cleared below) could be mistaken for it or hide it.
    if (!staging::Ok(cudaPeekAtLastError(), "an op before an allocation")) return nullptr;
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
    // After a device failure cudaFree may return that failure again; it is already recorded.
    if (p != nullptr) (void)cudaFree(p);
  }

  Status Upload(void* dst, const void* host_src, size_t bytes) override {
    if (!staging::Ready()) return LastError();
    if (bytes == 0) return Status();
    if (!staging::Ok(cudaMemcpy(dst, host_src, bytes, cudaMemcpyHostToDevice),
                     "upload to device memory")) {
      return LastError();
    }
    return Status();
  }

  Status Download(void* host_dst, const void* src, size_t bytes) override {
    if (!staging::Ready()) return LastError();
    // A failed launch is not seen by the copy: check the ops queued since the last check.
    if (!staging::Launched("an op before a download")) return LastError();
    if (bytes == 0) return Status();
    // Waits for the queued ops: an asynchronous fault in one of them is returned here.
    if (!staging::Ok(cudaMemcpy(host_dst, src, bytes, cudaMemcpyDeviceToHost),
                     "download from device memory (or an op queued before it)")) {
      return LastError();
    }
    return Status();
  }

  Status Copy(void* dst, const void* src, size_t bytes) override {
    if (!staging::Ready()) return LastError();
    if (bytes == 0) return Status();
    if (!staging::Ok(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice,
                                     staging::Stream()),
                     "copy within device memory")) {
      return LastError();
    }
    return Status();
  }
};

}  // namespace

Memory& DeviceMemory() {
  static DeviceMemoryImpl* memory = new DeviceMemoryImpl;  // never destroyed, as HostMemory()
  return *memory;
}

}  // namespace g4::cuda
