// KvWrite: stores a chunk's K/V rows into a KV cache's slots, each row's slot computed from its
// absolute position where the positions live (device memory under the CUDA backend). Because
// the slot is read at run time, not chosen on the host, a recorded decode step (ops/graph.h)
// writes the right slot every time it is replayed.
//
// For r in [0, C): slot = window > 0 ? pos[r] % window : pos[r];
//   k_cache[slot] = k[r]; v_cache[slot] = v[r]; pos_cache[slot] = pos[r]
// with rows of `row` floats (n_kv_heads * head_dim). A row whose pos is negative or whose slot
// is >= capacity is skipped (a kernel cannot report it; the cache checks capacity on the host
// before it asks for the write). Rows must map to distinct slots (a ring passes at most
// `window` consecutive positions): the order of writes to one slot is undefined.
#pragma once

#include <cstdint>

#include "core/thread_pool.h"

namespace g4 {

struct KvWriteArgs {
  const float* k = nullptr;      // [C, row]
  const float* v = nullptr;      // [C, row]
  const int32_t* pos = nullptr;  // [C] absolute positions
  int64_t C = 0, row = 0;
  int32_t window = 0;            // ring of `window` slots; 0: slot = position
  int64_t capacity = 0;          // slots in the cache
  float* k_cache = nullptr;      // [capacity, row]
  float* v_cache = nullptr;      // [capacity, row]
  int32_t* pos_cache = nullptr;  // [capacity]
};

using KvWriteFn = void (*)(ThreadPool& pool, const KvWriteArgs& args);

}  // namespace g4
