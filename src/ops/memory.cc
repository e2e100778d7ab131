#include "ops/memory.h"

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

Memory& HostMemory() {
  static HostMemoryImpl* memory = new HostMemoryImpl;  // never destroyed: used at static teardown
  return *memory;
}

}  // namespace g4
