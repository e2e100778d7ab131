// KvWrite: stores a chunk's K/V rows into a KV cache's slots, each row's slot computed from its
// absolute position where the positions live (device memory under the CUDA backend). Because
// the slot is read at run time, not chosen on the host, a recorded decode step (ops/graph.h)
// writes the right slot every time it is replayed.
//
// For r in [0, C): slot = window > 0 ? pos[r] % window : pos[r] - base;
//   k_cache[slot] = k[r]; v_cache[slot] = v[r]; pos_cache[slot] = pos[r]
// with rows of `row` values (n_kv_heads * head_dim). A bf16 cache (k_cache16 / v_cache16 set,
// k_cache / v_cache null) stores each value rounded to nearest even (g4::F32ToBf16). A row whose pos is negative or whose slot
// is >= capacity is skipped (a kernel cannot report it; the cache checks capacity on the host
// before it asks for the write). Rows must map to distinct slots (a ring passes at most
// `window` consecutive positions): the order of writes to one slot is undefined.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/status.h"
#include "core/thread_pool.h"

namespace g4 {

// What a KV cache keeps K/V as. bf16 halves the bytes a long context holds and attention reads
// at every step; every value attention sees (a chunk's own too) is then the stored, rounded one.
enum class KvDtype { kF32, kBF16 };
const char* KvDtypeName(KvDtype t);  // "f32" | "bf16"
size_t KvDtypeSize(KvDtype t);       // 4 | 2
// "f32" | "bf16"; InvalidArgument naming the accepted values otherwise.
StatusOr<KvDtype> ParseKvDtype(const std::string& name);

struct KvWriteArgs {
  const float* k = nullptr;      // [C, row]
  const float* v = nullptr;      // [C, row]
  const int32_t* pos = nullptr;  // [C] absolute positions
  int64_t C = 0, row = 0;
  int32_t window = 0;            // ring of `window` slots; 0: slot = position - base
  int64_t base = 0;              // window == 0: the position of slot 0
  int64_t capacity = 0;          // slots in the cache
  float* k_cache = nullptr;      // [capacity, row]; f32 caches
  float* v_cache = nullptr;      // [capacity, row]
  uint16_t* k_cache16 = nullptr;  // [capacity, row]; bf16 caches instead (cpu and ref backends)
  uint16_t* v_cache16 = nullptr;  // [capacity, row]
  int32_t* pos_cache = nullptr;  // [capacity]
};

using KvWriteOp = void(ThreadPool& pool, const KvWriteArgs& args);
using KvWriteFn = KvWriteOp*;

}  // namespace g4
