// The KV cache's slot rule on the device (ops/kv_write.h), shared by the KvWrite kernel and the
// KV store inside NormRope, so both put a row where ref::KvWrite does; the slot's entry is
// ops/kv_blocks.h's KvEntry, which the device calls as it is.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "ops/kv_blocks.h"

namespace g4::cuda {

// The slot of position pos: pos % window in a ring (window > 0), pos - base in a full cache;
// -1 when the row is not stored (a negative position: padding; a slot outside the capacity).
// CUDA caches are f32 (the backend refuses bf16 K/V): k_cache16 / v_cache16 are never set.
__device__ __forceinline__ int64_t KvSlot(int32_t pos, int32_t window, int64_t base,
                                          int64_t capacity) {
  if (pos < 0) return -1;
  const int64_t slot = window > 0 ? pos % window : pos - base;
  return slot >= 0 && slot < capacity ? slot : -1;
}

}  // namespace g4::cuda
