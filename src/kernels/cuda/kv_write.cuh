// The KV cache's slot and entry rules on the device (ops/kv_write.h, ops/kv_blocks.h), shared by
// the KvWrite kernel, the KV store inside NormRope and attention, so all put or find a row where
// the ref kernels do.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

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

// Where slot's K/V rows are: entry block_table[slot / block_size] * block_size + slot %
// block_size of the arrays with a table, the slot itself without (ops/kv_blocks.h's KvEntry).
__device__ __forceinline__ int64_t KvEntryOnDevice(const int32_t* block_table, int32_t block_size,
                                                   int64_t slot) {
  if (block_table == nullptr) return slot;
  return static_cast<int64_t>(block_table[slot / block_size]) * block_size + slot % block_size;
}

}  // namespace g4::cuda
