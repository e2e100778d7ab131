// Generate: token-by-token generation for one sequence — chunked prefill into a fresh KV
// cache, then one decode step per token, with sampling, stop ids and stop strings, max tokens,
// and the degeneracy (token-loop) check on every token. Decode speed is timed over the decode
// steps alone, apart from prefill and end-to-end time. GenerateInCache continues a cache that
// holds the start of the prompt (a chat's next turn).
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/causal_lm.h"
#include "runtime/prefill.h"
#include "runtime/sampling/degeneracy.h"
#include "runtime/sampling/sampler.h"

namespace g4 {

namespace grammar {
struct Grammar;
class VocabIndex;
}  // namespace grammar

// Grammar-constrained sampling (runtime/grammar/grammar.h): before each step the tokens that
// would leave the grammar are masked out, then the sampler runs as usual.
struct GrammarOptions {
  std::shared_ptr<const grammar::Grammar> grammar;   // null: unconstrained
  std::shared_ptr<const grammar::VocabIndex> vocab;  // the tokenizer's; required with a grammar
  // >= 0: sampling is free until the model samples this token, which starts the grammar (a
  // tool call the model opens itself: its arguments are then held to the tool's schema).
  int32_t trigger_token = -1;
};

struct GenerationOptions {
  int max_tokens = 256;
  SamplingParams sampling;
  std::vector<int32_t> stop_ids;          // usually the checkpoint's eos ids (1, 106, 50)
  std::vector<std::string> stop_strings;  // matched on decoded text (needs decode_piece)
  bool ignore_eos = false;                // continue past stop ids (how goldens were made)
  int prefill_chunk = kDefaultPrefillChunk;
  int max_context = 0;                    // 0: prompt + max_tokens
  DegeneracyOptions degeneracy;
  bool stop_on_degenerate = false;        // end generation when the loop check trips
  GrammarOptions grammar;
};

struct GenerationStats {
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;  // of prompt_tokens, already in the cache (GenerateInCache)
  int64_t generated_tokens = 0;
  int64_t decode_steps = 0;  // forward passes of one token
  double prefill_seconds = 0, decode_seconds = 0, total_seconds = 0;

  double PrefillTokensPerSecond() const {
    return Rate(prompt_tokens - cached_tokens, prefill_seconds);
  }
  double DecodeTokensPerSecond() const { return Rate(decode_steps, decode_seconds); }
  double EndToEndTokensPerSecond() const { return Rate(generated_tokens, total_seconds); }

 private:
  static double Rate(int64_t n, double s) { return s > 0 ? static_cast<double>(n) / s : 0.0; }
};

struct GenerationResult {
  std::vector<int32_t> tokens;  // generated ids; a stop id that ended generation is not included
  int64_t sampled = 0;          // every sampled id, a final stop id included (usage counts)
  std::string text;             // emitted text (when decode_piece is given)
  std::string finish_reason;    // "stop", "length", "degenerate" or "cancelled"
  DegeneracyVerdict degeneracy;
  GenerationStats stats;
};

struct GenerationCallbacks {
  // Text of one token for streaming (an incremental detokenizer). Optional; required for stop
  // strings.
  std::function<std::string(int32_t token)> decode_piece;
  // Each sampled token and the text now safe to emit (a stop id's own text never is). Return
  // false to cancel.
  std::function<bool(int32_t token, std::string_view text)> on_token;
  ProgressFn on_prefill_progress;
  // One-line notes for the user (the KV cache's memory figures).
  std::function<void(const std::string&)> on_info;
};

StatusOr<GenerationResult> Generate(const CausalLM& model, Backend& backend,
                                    std::span<const int32_t> prompt,
                                    const GenerationOptions& options,
                                    const GenerationCallbacks& callbacks = {});

// Generate in a cache that already holds prompt[0, cache.size()) (the prompt and answer of a
// chat's previous turn, whose next prompt extends them): only the rest is prefilled. The caller
// vouches for the cached ids; cache.size() must be < prompt.size() (the last prompt position is
// run for its logits). Afterwards the cache holds prompt + the generated tokens that were run:
// (prompt ++ result.tokens)[0, cache.size()). options.max_context is ignored: the cache's rules.
StatusOr<GenerationResult> GenerateInCache(const CausalLM& model, Backend& backend,
                                           SequenceKvCache& cache,
                                           std::span<const int32_t> prompt,
                                           const GenerationOptions& options,
                                           const GenerationCallbacks& callbacks = {});

}  // namespace g4
