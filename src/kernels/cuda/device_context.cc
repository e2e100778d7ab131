#include "kernels/cuda/device_context.h"

#include <atomic>
#include <cmath>
#include <cstdlib>
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

// The open context (at most one: a process has one CUDA context per device, and g4 drives
// device 0). Its owners hold it; this only finds it, for the ops (device_context.h).
std::mutex& OpenMutex() {
  static std::mutex* mu = new std::mutex;  // never destroyed: a context may close at exit
  return *mu;
}
std::weak_ptr<DeviceContext>& OpenContext() {
  static auto* open = new std::weak_ptr<DeviceContext>;
  return *open;
}
std::atomic<DeviceContext*>& CurrentContext() {
  static std::atomic<DeviceContext*> current{nullptr};
  return current;
}
Status& OpenFailure() {
  static Status* failure = new Status;
  return *failure;
}

// Host copy of `w`'s elements as f16. DataLoss when a value is outside f16's range: the weight
// cannot run in f16, and inf would be silent garbage.
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

StatusOr<std::shared_ptr<DeviceContext>> DeviceContext::Open(int ordinal) {
  std::lock_guard<std::mutex> lock(OpenMutex());
  if (std::shared_ptr<DeviceContext> open = OpenContext().lock()) {
    if (open->ordinal_ == ordinal) return open;
    return FailedPrecondition("CUDA device " + std::to_string(open->ordinal_) +
                              " is open: g4 drives one device at a time (asked for " +
                              std::to_string(ordinal) + ")");
  }
  auto opened = [&]() -> StatusOr<std::shared_ptr<DeviceContext>> {
    G4_ASSIGN_OR_RETURN(DeviceInfo info, QueryDevice(ordinal));
    G4_ASSIGN_OR_RETURN(DevicePolicy policy, ChoosePolicy(info));
    if (cudaError_t e = cudaSetDevice(ordinal); e != cudaSuccess) {
      return Unavailable("cudaSetDevice(" + std::to_string(ordinal) +
                         "): " + cudaGetErrorString(e));
    }
    std::shared_ptr<DeviceContext> dc(new DeviceContext);
    // Non-blocking: capture is illegal on the legacy default stream (and a blocking stream
    // would still order with it).
    if (cudaError_t e = cudaStreamCreateWithFlags(&dc->stream_, cudaStreamNonBlocking);
        e != cudaSuccess) {
      (void)cudaGetLastError();
      dc->stream_ = nullptr;
      return Unavailable(std::string("cudaStreamCreateWithFlags: ") + cudaGetErrorString(e));
    }
    const size_t bytes = kCounters * sizeof(unsigned);
    void* p = nullptr;
    if (cudaError_t e = cudaMalloc(&p, bytes);
        e != cudaSuccess || (e = cudaMemset(p, 0, bytes)) != cudaSuccess) {
      (void)cudaGetLastError();
      if (p != nullptr) cudaFree(p);
      return Unavailable(std::string("device counters: ") + cudaGetErrorString(e));
    }
    dc->counters_ = static_cast<unsigned*>(p);
    // G4_CUDA_PDL=0 turns programmatic dependent launch off (the policy line says so): for
    // measuring what it gains on the same device, not a tuning knob.
    if (const char* pdl = std::getenv("G4_CUDA_PDL"); pdl != nullptr && std::string(pdl) == "0") {
      policy.pdl = false;
    }
    ProgrammaticLaunches().store(policy.pdl);
    dc->policy_ = policy;
    dc->limits_ = LimitsOf(info);
    dc->ordinal_ = ordinal;
    return dc;
  }();
  if (!opened.ok()) {
    OpenFailure() = opened.status();
    return opened.status();
  }
  OpenFailure() = Status();
  OpenContext() = *opened;
  CurrentContext().store(opened->get());
  return opened;
}

DeviceContext* DeviceContext::Current() { return CurrentContext().load(); }

Status DeviceContext::LastOpenFailure() {
  std::lock_guard<std::mutex> lock(OpenMutex());
  return OpenFailure();
}

DeviceContext::~DeviceContext() {
  // Not under OpenMutex: a context that fails half way through Open is destroyed there.
  DeviceContext* self = this;
  CurrentContext().compare_exchange_strong(self, nullptr);
  // Drained first: queued work may still read the weights and the workspace. A capture left
  // open (its owner ended mid-capture) is ended and its graph dropped.
  if (stream_ != nullptr) {
    if (capturing_) {
      cudaGraph_t graph = nullptr;
      (void)cudaStreamEndCapture(stream_, &graph);
      if (graph != nullptr) (void)cudaGraphDestroy(graph);
      capturing_ = false;
    }
    (void)cudaStreamSynchronize(stream_);
  }
  for (auto& [key, w] : weights_) Free(w);
  if (workspace_ != nullptr) (void)cudaFree(workspace_);
  if (counters_ != nullptr) (void)cudaFree(counters_);
  if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
  (void)cudaGetLastError();  // a failure here belongs to no op
}

void DeviceContext::Record(Status s) {
  if (!error_.ok()) return;
  LogError("cuda: " + s.message() +
           " (sticky: later CUDA ops on this device do nothing and report it)");
  error_ = std::move(s);
}

void DeviceContext::Free(CachedWeight& w) {
  if (w.data != nullptr) cudaFree(w.data);
  if (w.scales != nullptr) cudaFree(w.scales);
  w.data = w.scales = nullptr;
}

bool DeviceContext::Ok(cudaError_t e, const char* what) {
  if (failed()) return false;
  if (e == cudaSuccess) return true;
  std::string msg = std::string(what) + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e);
  // While capturing, an error (a refused call, a bad launch) fails the capture, not the device.
  if (!CaptureRefuses(msg)) Record(Internal(std::move(msg)));
  return false;
}

bool DeviceContext::Ok(const Status& s, const char* what) {
  if (failed()) return false;
  if (s.ok()) return true;
  std::string msg = std::string(what) + ": " + s.message();
  if (!CaptureRefuses(msg)) Record(Status(s.code(), std::move(msg)));
  return false;
}

bool DeviceContext::CaptureRefuses(const std::string& why) {
  if (!capturing_) return false;
  if (capture_failure_.empty()) capture_failure_ = why;
  return true;
}

void DeviceContext::SetCapturing(bool on) {
  capturing_ = on;
  if (on) capture_failure_.clear();
}

void* DeviceContext::Workspace(size_t bytes) {
  if (failed()) return nullptr;
  if (bytes == 0) bytes = 1;
  if (workspace_bytes_ < bytes) {
    if (CaptureRefuses("workspace growth (cudaMalloc)")) return nullptr;
    if (workspace_ != nullptr) cudaFree(workspace_);
    workspace_ = nullptr;
    workspace_bytes_ = 0;
    // Grow by half again so slowly growing prefill chunks do not reallocate every call.
    const size_t want = bytes + bytes / 2;
    if (!Ok(cudaMalloc(&workspace_, want), "cudaMalloc(workspace)")) return nullptr;
    workspace_bytes_ = want;
  }
  return workspace_;
}

// A graph would copy from the host memory as it is at each launch, and a capture cannot wait:
// the copies and Sync are refused while capturing. A cudaMemcpy would run on the legacy
// stream, which does not order with stream(): each is an async copy on stream() and a wait.
bool DeviceContext::ToDevice(void* dst, const void* src, size_t bytes) {
  if (CaptureRefuses("a copy from host memory to the device")) return false;
  if (bytes == 0) return !failed();
  return Ok(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_),
            "copy host->device") &&
         Ok(cudaStreamSynchronize(stream_), "copy host->device");
}

bool DeviceContext::ToHost(void* dst, const void* src, size_t bytes) {
  if (CaptureRefuses("a copy from the device to host memory")) return false;
  if (bytes == 0) return !failed();
  const char* what = "copy device->host (or an op queued before it)";
  return Ok(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_), what) &&
         Ok(cudaStreamSynchronize(stream_), what);
}

bool DeviceContext::Sync(const char* what) {
  if (CaptureRefuses(std::string("a wait for the device (") + what + ")")) return false;
  if (!Ok(cudaGetLastError(), what)) return false;
  return Ok(cudaStreamSynchronize(stream_), what);
}

bool DeviceContext::Launched(const char* what) { return Ok(cudaGetLastError(), what); }

const TensorView* DeviceContext::DeviceWeight(const TensorView& w, bool convert_to_compute) {
  if (failed()) return nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  const auto key = std::make_pair(w.data, convert_to_compute);
  auto it = weights_.find(key);
  // The same address with another dtype, shape or size is another view (or a new tensor in
  // freed memory): uploaded anew. The content is not looked at (a hot path: ~1000 ops per
  // token); a new tensor of the same kind at a freed address is the caller's to prevent by
  // ReleaseWeights (kernels.h).
  if (it != weights_.end() && it->second.host_dtype == w.dtype &&
      it->second.host_shape == w.shape && it->second.host_bytes == w.nbytes()) {
    return &it->second.view;
  }
  // An upload (cudaMalloc, a host copy) cannot be recorded: run the op once before capturing.
  if (CaptureRefuses("the first use of weight " + ShapeToString(w.shape) + " " + StorageName(w) +
                     " uploads it")) {
    return nullptr;
  }
  if (it != weights_.end()) {
    weight_bytes_ -= static_cast<int64_t>(it->second.bytes);
    Free(it->second);
    weights_.erase(it);
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
  if (convert_to_compute && w.dtype == DType::kBF16 && policy_.compute == DType::kF16) {
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
    Free(c);
    return nullptr;
  }
  c.bytes = bytes;
  if (w.quantized() && w.quant.scales != nullptr) {
    const size_t sbytes = w.scale_nbytes();
    if (!Ok(cudaMalloc(&c.scales, sbytes > 0 ? sbytes : 1), "cudaMalloc(scales)") ||
        !ToDevice(c.scales, w.quant.scales, sbytes)) {
      Free(c);
      return nullptr;
    }
    c.bytes += sbytes;
    c.view.quant.scales = c.scales;
  }
  c.view.data = c.data;
  weight_bytes_ += static_cast<int64_t>(c.bytes);
  auto [added, inserted] = weights_.emplace(key, std::move(c));
  return &added->second.view;
}

void DeviceContext::ReleaseWeights() {
  // cudaFree cannot be recorded; the memory stays until a release outside the capture.
  if (CaptureRefuses("releasing the device weights (cudaFree)")) return;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [key, w] : weights_) Free(w);
  weights_.clear();
  weight_bytes_ = 0;
  if (workspace_ != nullptr) cudaFree(workspace_);
  workspace_ = nullptr;
  workspace_bytes_ = 0;
}

void* HostScratch(int slot, size_t bytes) {
  // Per thread: the ops of one Backend run on one thread at a time, and two backends on two
  // threads must not share these.
  thread_local std::vector<unsigned char> buffers[kHostSlots];
  if (slot < 0 || slot >= kHostSlots) return nullptr;
  if (buffers[slot].size() < bytes) buffers[slot].resize(bytes);
  return buffers[slot].data();
}

StatusOr<std::shared_ptr<DeviceContext>> OpenDevice(int ordinal) {
  return DeviceContext::Open(ordinal);
}

const DevicePolicy& PolicyOf(const DeviceContext& dc) { return dc.policy(); }

void ReleaseDeviceMemory() {
  if (DeviceContext* dc = DeviceContext::Current()) dc->ReleaseWeights();
}

Status LastError() {
  if (DeviceContext* dc = DeviceContext::Current()) return dc->error();
  Status failure = DeviceContext::LastOpenFailure();
  if (!failure.ok()) return failure;
  return FailedPrecondition("no CUDA device is open (a kCuda Backend opens one)");
}

int64_t CachedWeightBytes() {
  DeviceContext* dc = DeviceContext::Current();
  return dc != nullptr ? dc->cached_weight_bytes() : 0;
}

}  // namespace g4::cuda
