// Chunked prefill: a prompt runs through the KV cache in chunks of at most `chunk` tokens, so
// no buffer grows with T^2 and a long prompt that fits in memory cannot fail on a transient.
// Any chunk size gives the same logits (tests/runtime/decode_test.cc).
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "model/causal_lm.h"
#include "runtime/kv_cache/kv_cache.h"

namespace g4 {

inline constexpr int kDefaultPrefillChunk = 512;

// Called after each chunk with (tokens done, tokens total).
using ProgressFn = std::function<void(int64_t done, int64_t total)>;

// Runs ids at positions cache.size().. and appends them to the cache. Returns the logits of
// every position ([T, vocab]) when all_logits, else of the last one ([vocab]). Refuses, before
// any work, a sequence that would not fit in the cache's context.
StatusOr<std::vector<float>> Prefill(const CausalLM& model, Backend& backend,
                                     SequenceKvCache& cache, std::span<const int32_t> ids,
                                     int chunk = kDefaultPrefillChunk, bool all_logits = false,
                                     const ProgressFn& progress = {});

}  // namespace g4
