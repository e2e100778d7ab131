// ProtectedMemory: a test Memory that behaves like a GPU's as far as the host can tell. Every
// allocation is its own mapping, inaccessible (PROT_NONE) except inside this class's own
// copies, so host code that dereferences a pointer it handed out crashes the test instead of
// silently working as it would on HostMemory. Copies must lie inside one allocation. Lets CPU
// tests check that code meant for device memory (KV caches, the forward pass's plumbing) only
// ever moves bytes through the Memory interface.
#pragma once

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <mutex>

#include "ops/memory.h"

namespace g4::testing {

class ProtectedMemory final : public Memory {
 public:
  ~ProtectedMemory() override {
    for (auto& [p, n] : regions_) munmap(p, n);
  }
  const char* name() const override { return "protected"; }
  bool is_device() const override { return true; }

  void* Alloc(size_t bytes) override {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t n = (std::max<size_t>(bytes, 1) + page - 1) / page * page;
    void* p = mmap(nullptr, n, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    std::lock_guard<std::mutex> lock(mu_);
    regions_[static_cast<char*>(p)] = n;
    return p;
  }
  void Free(void* p) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = regions_.find(static_cast<char*>(p));
    if (it == regions_.end()) {
      ADD_FAILURE() << "Free of a pointer this memory did not allocate";
      return;
    }
    munmap(it->first, it->second);
    regions_.erase(it);
  }
  Status Upload(void* dst, const void* src, size_t bytes) override {
    return Move(dst, src, bytes, /*dst_here=*/true, /*src_here=*/false);
  }
  Status Download(void* dst, const void* src, size_t bytes) override {
    return Move(dst, src, bytes, false, true);
  }
  Status Copy(void* dst, const void* src, size_t bytes) override {
    return Move(dst, src, bytes, true, true);
  }

  int live_allocations() const {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int>(regions_.size());
  }

 private:
  // The allocation holding [p, p + bytes), or regions_.end().
  std::map<char*, size_t>::iterator Find(const void* p, size_t bytes) {
    const char* c = static_cast<const char*>(p);
    auto it = regions_.upper_bound(const_cast<char*>(c));
    if (it == regions_.begin()) return regions_.end();
    --it;
    if (c + bytes > it->first + it->second) return regions_.end();
    return it;
  }
  Status Move(void* dst, const void* src, size_t bytes, bool dst_here, bool src_here) {
    if (bytes == 0) return Status();
    std::lock_guard<std::mutex> lock(mu_);
    std::map<char*, size_t>::iterator d = regions_.end(), s = regions_.end();
    if (dst_here && (d = Find(dst, bytes)) == regions_.end()) {
      return Internal("copy destination is not inside one protected allocation");
    }
    if (src_here && (s = Find(src, bytes)) == regions_.end()) {
      return Internal("copy source is not inside one protected allocation");
    }
    if (d != regions_.end()) mprotect(d->first, d->second, PROT_READ | PROT_WRITE);
    if (s != regions_.end()) mprotect(s->first, s->second, PROT_READ | PROT_WRITE);
    std::memmove(dst, src, bytes);
    if (d != regions_.end()) mprotect(d->first, d->second, PROT_NONE);
    if (s != regions_.end()) mprotect(s->first, s->second, PROT_NONE);
    return Status();
  }

  mutable std::mutex mu_;
  std::map<char*, size_t> regions_;
};

}  // namespace g4::testing
