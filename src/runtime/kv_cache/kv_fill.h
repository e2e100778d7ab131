// Synthetic depth for benchmarks: a cache filled to n positions with pseudo-random K/V, in the
// shape a prompt of n tokens leaves it (every owning layer; rings their last window), without
// running the model. Decode and prefill cost at a depth do not depend on the values, and a real
// prefill of 128K positions takes hours on a small CPU (`g4 bench --kv-fill`).
#pragma once

#include <cstdint>

#include "core/status.h"
#include "model/causal_lm.h"
#include "ops/backend.h"
#include "runtime/kv_cache/kv_cache.h"

namespace g4 {

// Appends positions [cache.size(), n) to every layer of `cache` that owns K/V, values in
// [-1, 1) drawn from `seed`, stored through the backend's KvWrite as the cache's dtype. Host
// caches only (a device cache is refused).
Status FillKvCache(const ModelInfo& info, Backend& backend, SequenceKvCache& cache, int32_t n,
                   uint32_t seed = 1);

}  // namespace g4
