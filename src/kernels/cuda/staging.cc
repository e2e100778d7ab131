#include "kernels/cuda/staging.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "core/log.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/launch.h"

namespace g4::cuda {
namespace {

struct CachedWeight {
  DType host_dtype;
  std::vector<int64_t> host_shape;
  size_t host_bytes = 0;  // nbytes() of the host tensor
  void* data = nullptr;
  void* scales = nullptr;
  size_t bytes = 0;
  TensorView view;  // the device copy
};

struct State {
  std::mutex mu;
  bool initialized = false;
  int ordinal = -1;
  DevicePolicy policy;
  DeviceLimits limits;
  Status error;  // the first failure, sticky
  cudaStream_t stream = nullptr;  // every op's and copy's stream (non-blocking), made at Init
  unsigned* counters = nullptr;   // staging::kDeviceCounters, made (zeroed) at Init
  bool capturing = false;         // a graph capture is in progress (graph.cc)
  std::string capture_failure;    // the first thing the capture could not record
  // The staged wrappers' slots, then the dev ops' workspace (OpWorkspace) at kSlots.
  void* scratch[staging::kSlots + 1] = {};
  size_t scratch_bytes[staging::kSlots + 1] = {};
  // Key: (host data pointer, converted to compute dtype).
  std::map<std::pair<const void*, bool>, CachedWeight> weights;
  int64_t weight_bytes = 0;
};

State& S() {
  static State* s = new State;  // never destroyed: ops may run during static destruction
  return *s;
}

void Record(Status s) {
  State& st = S();
  if (!st.error.ok()) return;
  LogError("cuda: " + s.message() +
           " (sticky: later CUDA ops do nothing and report it; host-pointer ops write NaN)");
  st.error = std::move(s);
}

void FreeWeight(CachedWeight& w) {
  if (w.data != nullptr) cudaFree(w.data);
  if (w.scales != nullptr) cudaFree(w.scales);
  w.data = w.scales = nullptr;
}

// Host copy of `w`'s elements converted to `to` (F16 from BF16 here). DataLoss when a value is
// outside f16's range: the weight cannot run in f16, and inf would be silent garbage.
StatusOr<std::vector<uint16_t>> ConvertToF16(const TensorView& w) {
  const int64_t n = w.numel();
  std::vector<uint16_t> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const float f = LoadAsF32(w.data, w.dtype, i);
    if (std::fabs(f) > 65504.0f) {
      return DataLoss("weight " + ShapeToString(w.shape) + " has value " + std::to_string(f) +
                      " at element " + std::to_string(i) +
                      ", outside the f16 range this device computes in");
    }
    out[static_cast<size_t>(i)] = F32ToF16(f);
  }
  return out;
}

}  // namespace

StatusOr<DevicePolicy> Init(int ordinal) {
  State& st = S();
  std::lock_guard<std::mutex> lock(st.mu);
  if (st.initialized && st.ordinal == ordinal) return st.policy;
  G4_ASSIGN_OR_RETURN(DeviceInfo info, QueryDevice(ordinal));
  G4_ASSIGN_OR_RETURN(DevicePolicy policy, ChoosePolicy(info));
  if (cudaError_t e = cudaSetDevice(ordinal); e != cudaSuccess) {
    return Unavailable("cudaSetDevice(" + std::to_string(ordinal) + "): " + cudaGetErrorString(e));
  }
  // Non-blocking: capture is illegal on the legacy default stream (and a blocking stream would
  // still order with it). Made once and kept, like the state itself.
  if (st.stream == nullptr) {
    if (cudaError_t e = cudaStreamCreateWithFlags(&st.stream, cudaStreamNonBlocking);
        e != cudaSuccess) {
      (void)cudaGetLastError();
      st.stream = nullptr;
      return Unavailable(std::string("cudaStreamCreateWithFlags: ") + cudaGetErrorString(e));
    }
  }
  if (st.counters == nullptr) {
    const size_t bytes = staging::kDeviceCounters * sizeof(unsigned);
    void* p = nullptr;
    if (cudaError_t e = cudaMalloc(&p, bytes);
        e != cudaSuccess || (e = cudaMemset(p, 0, bytes)) != cudaSuccess) {
      (void)cudaGetLastError();
      if (p != nullptr) cudaFree(p);
      return Unavailable(std::string("device counters: ") + cudaGetErrorString(e));
    }
    st.counters = static_cast<unsigned*>(p);
  }
  // G4_CUDA_PDL=0 turns programmatic dependent launch off (the policy line says so): for
  // measuring what it gains on the same device, not a tuning knob.
  if (const char* pdl = std::getenv("G4_CUDA_PDL"); pdl != nullptr && std::string(pdl) == "0") {
    policy.pdl = false;
  }
  ProgrammaticLaunches().store(policy.pdl);
  st.policy = policy;
  st.limits = LimitsOf(info);
  st.ordinal = ordinal;
  st.initialized = true;
  st.error = Status();
  return policy;
}

void ReleaseDeviceMemory() {
  State& st = S();
  // cudaFree cannot be recorded; the memory stays until a release outside the capture.
  if (staging::CaptureRefuses("ReleaseDeviceMemory (cudaFree)")) return;
  std::lock_guard<std::mutex> lock(st.mu);
  for (auto& [key, w] : st.weights) FreeWeight(w);
  st.weights.clear();
  st.weight_bytes = 0;
  for (int i = 0; i <= staging::kSlots; ++i) {
    if (st.scratch[i] != nullptr) cudaFree(st.scratch[i]);
    st.scratch[i] = nullptr;
    st.scratch_bytes[i] = 0;
  }
}

Status LastError() { return S().error; }

int64_t CachedWeightBytes() { return S().weight_bytes; }

namespace staging {

bool Ready() {
  if (S().initialized) return S().error.ok();
  auto p = Init(0);
  if (!p.ok()) {
    Record(p.status());
    return false;
  }
  return true;
}

const DevicePolicy& Policy() { return S().policy; }
const DeviceLimits& Limits() { return S().limits; }
cudaStream_t Stream() { return S().stream; }
unsigned* GemvCounter() { return S().counters; }
unsigned* AttentionCounters() { return S().counters == nullptr ? nullptr : S().counters + 1; }

bool Failed() { return !S().error.ok(); }

bool Ok(cudaError_t e, const char* what) {
  if (Failed()) return false;
  if (e == cudaSuccess) return true;
  std::string msg = std::string(what) + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e);
  // While capturing, an error (a refused call, a bad launch) fails the capture, not the device.
  if (!CaptureRefuses(msg)) Record(Internal(std::move(msg)));
  return false;
}

bool Ok(const Status& s, const char* what) {
  if (Failed()) return false;
  if (s.ok()) return true;
  std::string msg = std::string(what) + ": " + s.message();
  if (!CaptureRefuses(msg)) Record(Status(s.code(), std::move(msg)));
  return false;
}

bool Capturing() { return S().capturing; }

bool CaptureRefuses(const std::string& why) {
  State& st = S();
  if (!st.capturing) return false;
  if (st.capture_failure.empty()) st.capture_failure = why;
  return true;
}

void SetCapturing(bool on) {
  S().capturing = on;
  if (on) S().capture_failure.clear();
}

std::string TakeCaptureFailure() { return std::move(S().capture_failure); }

namespace {

// Grow-only device buffer `slot` of State::scratch (0..kSlots).
void* GrowScratch(int slot, size_t bytes) {
  State& st = S();
  if (bytes == 0) bytes = 1;
  if (st.scratch_bytes[slot] < bytes) {
    if (CaptureRefuses("staging scratch growth (cudaMalloc)")) return nullptr;
    if (st.scratch[slot] != nullptr) cudaFree(st.scratch[slot]);
    st.scratch[slot] = nullptr;
    st.scratch_bytes[slot] = 0;
    // Grow by half again so slowly growing prefill chunks do not reallocate every call.
    const size_t want = bytes + bytes / 2;
    if (!Ok(cudaMalloc(&st.scratch[slot], want), "cudaMalloc(scratch)")) return nullptr;
    st.scratch_bytes[slot] = want;
  }
  return st.scratch[slot];
}

}  // namespace

void* Scratch(int slot, size_t bytes) {
  if (Failed() || slot < 0 || slot >= kSlots) return nullptr;
  return GrowScratch(slot, bytes);
}

void* OpWorkspace(size_t bytes) {
  if (Failed()) return nullptr;
  return GrowScratch(kSlots, bytes);
}

// A graph would copy from the host memory as it is at each launch, and a capture cannot wait:
// the copies and Sync are refused while capturing. A cudaMemcpy would run on the legacy
// stream, which does not order with Stream(): each is an async copy on Stream() and a wait.
bool ToDevice(void* dst, const void* src, size_t bytes) {
  if (CaptureRefuses("a copy from host memory to the device")) return false;
  if (bytes == 0) return !Failed();
  return Ok(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, Stream()),
            "copy host->device") &&
         Ok(cudaStreamSynchronize(Stream()), "copy host->device");
}

bool ToHost(void* dst, const void* src, size_t bytes) {
  if (CaptureRefuses("a copy from the device to host memory")) return false;
  if (bytes == 0) return !Failed();
  const char* what = "copy device->host (or an op queued before it)";
  return Ok(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, Stream()), what) &&
         Ok(cudaStreamSynchronize(Stream()), what);
}

bool Sync(const char* what) {
  if (CaptureRefuses(std::string("a wait for the device (") + what + ")")) return false;
  if (!Ok(cudaGetLastError(), what)) return false;
  return Ok(cudaStreamSynchronize(Stream()), what);
}

bool Launched(const char* what) { return Ok(cudaGetLastError(), what); }

const TensorView* DeviceWeight(const TensorView& w, bool convert_to_compute) {
  if (!Ready()) return nullptr;
  State& st = S();
  std::lock_guard<std::mutex> lock(st.mu);
  const auto key = std::make_pair(w.data, convert_to_compute);
  auto it = st.weights.find(key);
  // The same address with another dtype, shape or size is another view (or a new tensor in
  // freed memory): uploaded anew. The content is not looked at (a hot path: ~1000 ops per
  // token); a new tensor of the same kind at a freed address is the caller's to prevent by
  // ReleaseDeviceMemory (kernels.h).
  if (it != st.weights.end() && it->second.host_dtype == w.dtype &&
      it->second.host_shape == w.shape && it->second.host_bytes == w.nbytes()) {
    return &it->second.view;
  }
  // An upload (cudaMalloc, a host copy) cannot be recorded: run the op once before capturing.
  if (CaptureRefuses("the first use of weight " + ShapeToString(w.shape) + " " + StorageName(w) +
                     " uploads it")) {
    return nullptr;
  }
  if (it != st.weights.end()) {
    st.weight_bytes -= static_cast<int64_t>(it->second.bytes);
    FreeWeight(it->second);
    st.weights.erase(it);
  }
  CachedWeight c;
  c.host_dtype = w.dtype;
  c.host_shape = w.shape;
  c.host_bytes = w.nbytes();
  c.view = w;
  const void* src = w.data;
  size_t bytes = w.nbytes();
  std::vector<uint16_t> converted;
  // The only conversion: bf16 -> f16 where the policy computes in f16 (SM 7.x). The kernels
  // widen F32, BF16 and F16 alike, so an F16 weight on a bf16 device stays F16 (converting it
  // to bf16 would only lose mantissa bits).
  if (convert_to_compute && w.dtype == DType::kBF16 && st.policy.compute == DType::kF16) {
    auto conv = ConvertToF16(w);
    if (!conv.ok()) {
      Record(conv.status());
      return nullptr;
    }
    converted = std::move(*conv);
    src = converted.data();
    bytes = converted.size() * sizeof(uint16_t);
    c.view.dtype = DType::kF16;
  }
  if (!Ok(cudaMalloc(&c.data, bytes > 0 ? bytes : 1), "cudaMalloc(weight)") ||
      !ToDevice(c.data, src, bytes)) {
    FreeWeight(c);
    return nullptr;
  }
  c.bytes = bytes;
  if (w.quantized() && w.quant.scales != nullptr) {
    const size_t sbytes = w.scale_nbytes();
    if (!Ok(cudaMalloc(&c.scales, sbytes > 0 ? sbytes : 1), "cudaMalloc(scales)") ||
        !ToDevice(c.scales, w.quant.scales, sbytes)) {
      FreeWeight(c);
      return nullptr;
    }
    c.bytes += sbytes;
    c.view.quant.scales = c.scales;
  }
  c.view.data = c.data;
  st.weight_bytes += static_cast<int64_t>(c.bytes);
  auto [added, inserted] = st.weights.emplace(key, std::move(c));
  return &added->second.view;
}

void* HostScratch(int slot, size_t bytes) {
  // Per thread: the ops of one Backend run on one thread at a time, and two backends on two
  // threads must not share these.
  thread_local std::vector<unsigned char> buffers[kSlots];
  if (slot < 0 || slot >= kSlots) return nullptr;
  if (buffers[slot].size() < bytes) buffers[slot].resize(bytes);
  return buffers[slot].data();
}

void FillNaN(float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = std::numeric_limits<float>::quiet_NaN();
}

}  // namespace staging
}  // namespace g4::cuda
