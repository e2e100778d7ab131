// KvStore: what the forward pass needs from a KV cache, so that model/ stays independent of
// runtime/ (which implements it: rings for sliding layers, blocks for global layers).
//
// The invariant every implementation keeps: a cache entry holds exactly one absolute real
// position, recorded next to it; attention masks by those positions (ops/attention.h), never by
// slot order, so padding or a wrapped ring can never be read as a real position.
//
// A store lives in one Memory (ops/memory.h), which must be the backend's: on a GPU the K/V
// stay in device memory between steps and the views point there.
#pragma once

#include <cstdint>

#include "core/status.h"
#include "ops/memory.h"

namespace g4 {

// Keys/values a chunk of queries attends over: [S, n_kv_heads, head_dim] each, with the
// absolute position of every entry (negative = empty slot). All three in the store's Memory.
struct KvView {
  const float* k = nullptr;
  const float* v = nullptr;
  const int32_t* pos = nullptr;
  int64_t S = 0;
};

class KvStore {
 public:
  virtual ~KvStore() = default;
  // Where the K/V live; the forward pass refuses a store that is not in its backend's Memory.
  virtual Memory& memory() const = 0;
  // For a layer that owns K/V: stores the chunk's k/v ([C, nkv, hd], post-norm and post-RoPE K,
  // in memory()) at absolute positions pos[0..C) (host array) and returns everything the
  // chunk's queries may need: the earlier cached entries plus the chunk itself. Valid until
  // the next Update of this layer. KV-shared layers reuse their donor's view of the same chunk
  // and never call this.
  virtual StatusOr<KvView> Update(int layer, const float* k, const float* v, const int32_t* pos,
                                  int64_t C) = 0;
};

}  // namespace g4
