#include "kernels/cuda/staging.h"

#include <algorithm>
#include <cmath>
#include <cstring>
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

namespace g4::cuda {
namespace {

struct CachedWeight {
  DType host_dtype;
  std::vector<int64_t> host_shape;
  uint64_t fingerprint = 0;  // Fingerprint() of the host bytes (and scales) at upload
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
  void* scratch[staging::kSlots] = {};
  size_t scratch_bytes[staging::kSlots] = {};
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
  LogError("cuda: " + s.message() + " (later CUDA ops return NaN)");
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

// A hash of 64 evenly spaced 8-byte samples of the host bytes (and of the scales): a different
// tensor at an address the cache knows (a freed buffer reused, e.g. by the next test case or a
// reloaded model) is uploaded anew instead of served stale. O(1) per op, so it catches a new
// tensor, not an in-place edit of a few elements of a cached one.
uint64_t Fingerprint(const TensorView& w) {
  uint64_t h = 1469598103934665603ull;
  auto sample = [&h](const void* data, size_t bytes) {
    const auto* p = static_cast<const unsigned char*>(data);
    h = (h ^ bytes) * 1099511628211ull;
    if (p == nullptr || bytes == 0) return;
    constexpr size_t kSamples = 64;
    for (size_t i = 0; i <= kSamples; ++i) {
      const size_t off = i < kSamples ? bytes * i / kSamples : bytes - std::min<size_t>(8, bytes);
      uint64_t v = 0;
      std::memcpy(&v, p + off, std::min<size_t>(8, bytes - off));
      h = (h ^ v) * 1099511628211ull;
    }
  };
  sample(w.data, w.nbytes());
  if (w.quantized()) sample(w.quant.scales, w.scale_nbytes());
  return h;
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
  st.policy = policy;
  st.limits = LimitsOf(info);
  st.ordinal = ordinal;
  st.initialized = true;
  st.error = Status();
  return policy;
}

void ReleaseDeviceMemory() {
  State& st = S();
  std::lock_guard<std::mutex> lock(st.mu);
  for (auto& [key, w] : st.weights) FreeWeight(w);
  st.weights.clear();
  st.weight_bytes = 0;
  for (int i = 0; i < staging::kSlots; ++i) {
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
cudaStream_t Stream() { return nullptr; }  // the legacy default stream: copies order with kernels

bool Failed() { return !S().error.ok(); }

bool Ok(cudaError_t e, const char* what) {
  if (Failed()) return false;
  if (e == cudaSuccess) return true;
  Record(Internal(std::string(what) + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e)));
  return false;
}

bool Ok(const Status& s, const char* what) {
  if (Failed()) return false;
  if (s.ok()) return true;
  Record(Status(s.code(), std::string(what) + ": " + s.message()));
  return false;
}

void* Scratch(int slot, size_t bytes) {
  State& st = S();
  if (Failed() || slot < 0 || slot >= kSlots) return nullptr;
  if (bytes == 0) bytes = 1;
  if (st.scratch_bytes[slot] < bytes) {
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

bool ToDevice(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return !Failed();
  return Ok(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "copy host->device");
}

bool ToHost(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return !Failed();
  return Ok(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "copy device->host");
}

bool Sync(const char* what) {
  if (!Ok(cudaGetLastError(), what)) return false;
  return Ok(cudaStreamSynchronize(Stream()), what);
}

const TensorView* DeviceWeight(const TensorView& w, bool convert_to_compute) {
  if (!Ready()) return nullptr;
  State& st = S();
  std::lock_guard<std::mutex> lock(st.mu);
  const auto key = std::make_pair(w.data, convert_to_compute);
  const uint64_t fingerprint = Fingerprint(w);
  if (auto it = st.weights.find(key); it != st.weights.end()) {
    // The same address with another dtype, shape or content is a new tensor in freed memory.
    if (it->second.host_dtype == w.dtype && it->second.host_shape == w.shape &&
        it->second.fingerprint == fingerprint) {
      return &it->second.view;
    }
    st.weight_bytes -= static_cast<int64_t>(it->second.bytes);
    FreeWeight(it->second);
    st.weights.erase(it);
  }
  CachedWeight c;
  c.host_dtype = w.dtype;
  c.host_shape = w.shape;
  c.fingerprint = fingerprint;
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
  auto [it, inserted] = st.weights.emplace(key, std::move(c));
  return &it->second.view;
}

void FillNaN(float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = std::numeric_limits<float>::quiet_NaN();
}

}  // namespace staging
}  // namespace g4::cuda
