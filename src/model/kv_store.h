// KvStore: what the forward pass needs from a KV cache, so that model/ stays independent of
// runtime/ (which implements it: rings for sliding layers, growing arrays for global layers).
//
// The invariant every implementation keeps: a cache entry holds exactly one absolute real
// position, recorded next to it; attention masks by those positions (ops/attention.h), never by
// slot order, so padding or a wrapped ring can never be read as a real position.
//
// A store lives in one Memory (ops/memory.h), which must be the backend's: on a GPU the K/V
// stay in device memory between steps and the views point there.
//
// A chunk goes in in two phases, so that a decode step can be recorded once and replayed
// (ops/graph.h): Reserve does the host's part for every layer (order and capacity checks,
// growth, bookkeeping) before any op of the step; Write, per layer and inside the step, only
// issues ops (KvWrite, whose slot the kernel reads from the device positions, and for chunks
// device-to-device copies) on buffers that stay put until storage_id() changes.
#pragma once

#include <cstdint>
#include <functional>

#include "core/status.h"
#include "ops/kv_write.h"
#include "ops/memory.h"

namespace g4 {

// Keys/values a chunk of queries attends over: [S, n_kv_heads, head_dim] each, f32 (k, v), bf16
// (k16, v16: a store of KvDtype kBF16) or int8 blocks (k8, v8 with their scales: kQ8, as
// ops/kv_write.h stores them), with the absolute position of every entry
// (negative = empty slot). All in the store's Memory.
// S is the storage's fixed capacity (a ring's window, a growing array's allocated length), not
// the entries filled: attention skips the empty ones, and a recorded step stays valid.
struct KvView {
  const float* k = nullptr;
  const float* v = nullptr;
  const int32_t* pos = nullptr;
  int64_t S = 0;
  const uint16_t* k16 = nullptr;
  const uint16_t* v16 = nullptr;
  const int8_t* k8 = nullptr;
  const int8_t* v8 = nullptr;
  const float* k_scale8 = nullptr;  // [S, n_kv_heads * head_dim / kQ8Block]
  const float* v_scale8 = nullptr;
  // Paged storage (ops/kv_blocks.h): [S / block_size] blocks of the arrays above, or null.
  const int32_t* block_table = nullptr;
  int32_t block_size = 0;
};

// How a store issues its writes: the backend's KvWrite op (Backend::KvWrite) in the forward
// pass; tests may pass a Memory-only writer.
using KvWriter = std::function<void(const KvWriteArgs&)>;

class KvStore {
 public:
  virtual ~KvStore() = default;
  // Where the K/V live; the forward pass refuses a store that is not in its backend's Memory.
  virtual Memory& memory() const = 0;
  // What the K/V are stored as; the forward pass refuses a dtype its backend cannot attend.
  virtual KvDtype kv_dtype() const = 0;
  // The host's part of appending positions pos[0..C) (host array; consecutive, following the
  // last stored one) to every layer that owns K/V: checks, growth (which may move the storage),
  // bookkeeping. Runs before the step's ops; after an order or context error nothing changed.
  virtual Status Reserve(const int32_t* pos, int64_t C) = 0;
  // For a layer that owns K/V, after Reserve of the same chunk: stores the chunk's k/v
  // ([C, nkv, hd], post-norm and post-RoPE K, in memory()) at the positions dev_pos[0..C) (the
  // same positions, in memory()) through `write`, and returns everything the chunk's queries
  // may need: the earlier cached entries plus the chunk itself. Valid until the next Write of
  // this layer. KV-shared layers reuse their donor's view and never call this. For C == 1
  // Write issues nothing but `write` calls, with the same arguments each step (recordable), so
  // a caller may take them before k and v are final and issue them after (the forward pass
  // folds a decode step's write into the norm op that finishes k and v).
  virtual StatusOr<KvView> Write(const KvWriter& write, int layer, const float* k, const float* v,
                                 const int32_t* dev_pos, int64_t C) = 0;
  // Changes (to a value never used before, by any store) whenever a buffer a view points to
  // moves: a step recorded over this store is stale then.
  virtual uint64_t storage_id() const = 0;
};

// A process-wide fresh value for storage_id().
uint64_t NewKvStorageId();

}  // namespace g4
