// Memory: where a backend keeps activations and the KV cache, and the only way bytes move
// between there and the host. The model allocates every activation through its backend's
// Memory and hands those pointers to the op functions, so on a GPU the forward pass stays in
// device memory from the embedding gather to the logits (one copy in for the token ids and
// positions, one copy out for the logits). The CPU and ref backends use HostMemory(): malloc
// and memcpy. A device Memory's pointers must never be dereferenced on the host.
#pragma once

#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <utility>

#include "core/status.h"

namespace g4 {

class Memory {
 public:
  virtual ~Memory() = default;
  // "host", "cuda": for error messages.
  virtual const char* name() const = 0;
  // True when pointers from Alloc are not readable on the host.
  virtual bool is_device() const = 0;
  // `bytes` of this memory, contents undefined; nullptr when it is exhausted.
  virtual void* Alloc(size_t bytes) = 0;
  virtual void Free(void* p) = 0;
  // host -> here; here -> host (after the work queued before it, whose failure it reports);
  // here -> here. Not OK when the device failed: the first failure is sticky.
  virtual Status Upload(void* dst, const void* host_src, size_t bytes) = 0;
  virtual Status Download(void* host_dst, const void* src, size_t bytes) = 0;
  virtual Status Copy(void* dst, const void* src, size_t bytes) = 0;
};

// malloc + memcpy: the memory of the ref and CPU backends, and of KV caches made without one.
Memory& HostMemory();

// Keeps freed blocks of `inner` for reuse by an allocation of the same size (rounded up to 256
// bytes), because a device's own allocator is slow and its free synchronizes the device: a
// decode step allocates the same buffers every time, so after the first step it allocates
// nothing. At most `max_cached_bytes` are kept; an allocation `inner` refuses releases them
// all and tries once more. Thread-safe.
class CachingMemory final : public Memory {
 public:
  explicit CachingMemory(Memory& inner, size_t max_cached_bytes = size_t{512} << 20);
  ~CachingMemory() override { ReleaseCached(); }

  const char* name() const override { return inner_.name(); }
  bool is_device() const override { return inner_.is_device(); }
  void* Alloc(size_t bytes) override;
  void Free(void* p) override;
  Status Upload(void* dst, const void* src, size_t n) override { return inner_.Upload(dst, src, n); }
  Status Download(void* dst, const void* src, size_t n) override {
    return inner_.Download(dst, src, n);
  }
  Status Copy(void* dst, const void* src, size_t n) override { return inner_.Copy(dst, src, n); }

  // Frees every kept block to `inner`.
  void ReleaseCached();
  size_t cached_bytes() const;
  // Calls of inner.Alloc so far: for tests.
  int64_t inner_allocations() const;

 private:
  Memory& inner_;
  const size_t max_cached_;
  mutable std::mutex mu_;
  std::map<void*, size_t> live_;            // block -> its rounded size
  std::multimap<size_t, void*> free_;       // rounded size -> kept block
  size_t cached_ = 0;
  int64_t inner_allocations_ = 0;
};

// A grow-only array of T in a Memory: Allocate(n) makes room for n elements, so a forward pass
// reuses one allocation per buffer across layers whose shapes differ (head dims 256 and 512).
template <typename T>
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(Memory& memory) : memory_(&memory) {}
  ~Buffer() { Release(); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& o) noexcept { *this = std::move(o); }
  Buffer& operator=(Buffer&& o) noexcept {
    if (this != &o) {
      Release();
      memory_ = o.memory_;
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
      capacity_ = std::exchange(o.capacity_, 0);
    }
    return *this;
  }

  // Room for n elements; Unavailable naming the bytes otherwise. The contents are kept while
  // n fits the capacity and undefined after a growth, which adds half again (a buffer growing
  // by one entry per decode step reallocates O(log n) times).
  Status Allocate(size_t n) {
    if (n > capacity_) {
      const size_t grown = capacity_ == 0 ? n : std::max(n, capacity_ + capacity_ / 2);
      Release();
      void* p = memory_->Alloc(grown * sizeof(T));
      if (p == nullptr) {
        return Unavailable("out of memory: cannot allocate " + std::to_string(grown * sizeof(T)) +
                           " bytes of " + memory_->name() + " memory");
      }
      data_ = static_cast<T*>(p);
      capacity_ = grown;
    }
    size_ = n;
    return Status();
  }
  // Allocate(host.size()), then the host elements copied in.
  Status Assign(std::span<const T> host) {
    G4_RETURN_IF_ERROR(Allocate(host.size()));
    return memory_->Upload(data_, host.data(), host.size_bytes());
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  size_t bytes() const { return size_ * sizeof(T); }
  size_t capacity() const { return capacity_; }
  Memory& memory() const { return *memory_; }

 private:
  void Release() {
    if (data_ != nullptr) memory_->Free(data_);
    data_ = nullptr;
    size_ = capacity_ = 0;
  }

  Memory* memory_ = &HostMemory();
  T* data_ = nullptr;
  size_t size_ = 0, capacity_ = 0;
};

}  // namespace g4
