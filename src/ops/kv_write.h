// KvWrite: stores a chunk's K/V rows into a KV cache's slots, each row's slot computed from its
// absolute position where the positions live (device memory under the CUDA backend). Because
// the slot is read at run time, not chosen on the host, a recorded decode step (ops/graph.h)
// writes the right slot every time it is replayed.
//
// For r in [0, C): slot = window > 0 ? pos[r] % window : pos[r] - base, e = KvEntry(slot);
//   k_cache[e] = k[r]; v_cache[e] = v[r]; pos_cache[slot] = pos[r]
// with rows of `row` values (n_kv_heads * head_dim). A bf16 cache (k_cache16 / v_cache16 set,
// k_cache / v_cache null) stores each value rounded to nearest even (g4::F32ToBf16). A q8 cache
// (k_cache8 / v_cache8 and their scales set) stores each block of kQ8Block values of a row as
// g4::QuantizeQ8Blocks does (int8 q, f32 d = absmax / 127: the value is d * q), so a block never
// straddles two heads when head_dim % kQ8Block == 0. A row whose pos is negative or whose slot
// is >= capacity is skipped (a kernel cannot report it; the cache checks capacity on the host
// before it asks for the write). Rows must map to distinct slots (a ring passes at most
// `window` consecutive positions): the order of writes to one slot is undefined. e is the slot
// unless a block_table is set (ops/kv_blocks.h: a full cache whose blocks sequences share).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/status.h"
#include "core/thread_pool.h"

namespace g4 {

// What a KV cache keeps K/V as. bf16 halves the bytes a long context holds and attention reads
// at every step, q8 (int8 blocks of 32 with an f32 scale each, 9 bits a value) takes them to
// 28%; every value attention sees (a chunk's own too) is then the stored, rounded one.
enum class KvDtype { kF32, kBF16, kQ8 };
const char* KvDtypeName(KvDtype t);  // "f32" | "bf16" | "q8"
// Bytes of one cache entry of `row` values, K or V alone (q8: the int8 values and the scales of
// their row / kQ8Block blocks). A q8 row needs row % kQ8Block == 0 (KvHeadFits).
size_t KvRowBytes(KvDtype t, int64_t row);
// Whether a head of head_dim values can be stored as t (q8: whole blocks of kQ8Block per head).
bool KvHeadFits(KvDtype t, int64_t head_dim);
// "f32" | "bf16" | "q8"; InvalidArgument naming the accepted values otherwise.
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
  int8_t* k_cache8 = nullptr;     // [capacity, row]; q8 caches instead (cpu and ref backends)
  int8_t* v_cache8 = nullptr;     // [capacity, row]
  float* k_scale8 = nullptr;      // [capacity, row / kQ8Block]: the blocks' d
  float* v_scale8 = nullptr;      // [capacity, row / kQ8Block]
  int32_t* pos_cache = nullptr;  // [capacity]
  const int32_t* block_table = nullptr;  // [capacity / block_size] or null (entry = slot)
  int32_t block_size = 0;                // > 0 with a table; capacity % block_size == 0
};

using KvWriteOp = void(ThreadPool& pool, const KvWriteArgs& args);
using KvWriteFn = KvWriteOp*;

}  // namespace g4
