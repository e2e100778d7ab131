#include "model/kv_store.h"

#include <atomic>

namespace g4 {

uint64_t NewKvStorageId() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace g4
