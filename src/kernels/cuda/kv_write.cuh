// The KV cache's slot rule on the device (ops/kv_write.h), shared by the KvWrite kernel and the
// KV store inside NormRope, so both put a row where ref::KvWrite does.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace g4::cuda {

// The slot of position pos: pos % window in a ring (window > 0), pos in a full cache; -1 when
// the row is not stored (a negative position: padding; a slot past the capacity).
__device__ __forceinline__ int64_t KvSlot(int32_t pos, int32_t window, int64_t capacity) {
  if (pos < 0) return -1;
  const int64_t slot = window > 0 ? pos % window : pos;
  return slot < capacity ? slot : -1;
}

}  // namespace g4::cuda
