// The `--profile` report of `g4 bench` and `g4 generate`: where decode time goes, by category, in
// ms per token and percent of the decode step (forward + sampling). Op categories come from the
// OpProfiler the Backend fills (ops/profiler.h); "other" is forward time outside every op (KV
// cache writes, buffers, the forward pass's own code); sampling is timed by the caller.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "ops/backend.h"
#include "ops/profiler.h"
#include "runtime/generator.h"

namespace g4::cli {

struct DecodeProfile {
  const OpProfiler* ops = nullptr;
  int64_t steps = 0;              // decode forward passes profiled
  double forward_seconds = 0;     // their wall time
  double sampling_seconds = 0;    // token choice after each step (outside the forward)
  const char* label = "decode";   // what a step is: "decode", or "prefill" (per prompt token)
  const char* unit = "steps";
};

// Lines like "  matvec int4      61.20 ms/tok  58.1%  (245 calls/tok)".
std::string FormatProfile(const DecodeProfile& p);
// {"ms_per_token": {...}, "percent": {...}, "lm_head_storage": ...}
nlohmann::ordered_json ProfileJson(const DecodeProfile& p);

// `--profile` for commands built on Generate(): attaches `profiler` (which must outlive the
// generation) to `backend`, recognising the head by `vocab` rows, and chains cb's prefill
// progress callback so the profiler is enabled once the prompt is done: only decode steps count.
void AttachDecodeProfiler(Backend& backend, OpProfiler& profiler, int64_t vocab,
                          GenerationCallbacks& cb);
// The report of a finished generation: decode forward time from its stats; everything between
// the decode steps (sampling, stop checks, detokenizing) as "sampling".
std::string FormatGenerationProfile(const OpProfiler& profiler, const GenerationStats& stats);

}  // namespace g4::cli
