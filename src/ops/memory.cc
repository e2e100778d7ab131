#include "ops/memory.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace g4 {
namespace {

class HostMemoryImpl final : public Memory {
 public:
  const char* name() const override { return "host"; }
  bool is_device() const override { return false; }
  void* Alloc(size_t bytes) override { return std::malloc(bytes > 0 ? bytes : 1); }
  void Free(void* p) override { std::free(p); }
  Status Upload(void* dst, const void* src, size_t bytes) override { return Copy(dst, src, bytes); }
  Status Download(void* dst, const void* src, size_t bytes) override {
    return Copy(dst, src, bytes);
  }
  Status Copy(void* dst, const void* src, size_t bytes) override {
    if (bytes > 0) std::memmove(dst, src, bytes);
    return Status();
  }
};

}  // namespace

CachingMemory::CachingMemory(Memory& inner, size_t max_cached_bytes)
    : inner_(inner), max_cached_(max_cached_bytes) {}

void* CachingMemory::Alloc(size_t bytes) {
  const size_t size = (std::max<size_t>(bytes, 1) + 255) / 256 * 256;
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = free_.find(size); it != free_.end()) {
    void* p = it->second;
    free_.erase(it);
    cached_ -= size;
    live_[p] = size;
    return p;
  }
  void* p = inner_.Alloc(size);
  ++inner_allocations_;
  if (p == nullptr && !free_.empty()) {  // kept blocks of other sizes may be what is missing
    for (auto& [n, q] : free_) inner_.Free(q);
    free_.clear();
    cached_ = 0;
    p = inner_.Alloc(size);
    ++inner_allocations_;
  }
  if (p != nullptr) live_[p] = size;
  return p;
}

void CachingMemory::Free(void* p) {
  if (p == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(p);
  if (it == live_.end()) return inner_.Free(p);  // not ours: let the inner memory judge
  const size_t size = it->second;
  live_.erase(it);
  if (cached_ + size > max_cached_) return inner_.Free(p);
  free_.emplace(size, p);
  cached_ += size;
}

void CachingMemory::ReleaseCached() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [n, p] : free_) inner_.Free(p);
  free_.clear();
  cached_ = 0;
}

size_t CachingMemory::cached_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cached_;
}

int64_t CachingMemory::inner_allocations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return inner_allocations_;
}

Memory& HostMemory() {
  static HostMemoryImpl* memory = new HostMemoryImpl;  // never destroyed: used at static teardown
  return *memory;
}

}  // namespace g4
