// Sequence: the per-request generation state shared by Generate (one sequence) and the
// continuous-batching engine (many): the sampler, the grammar matcher, stop ids and strings,
// max tokens, the degeneracy check, the generated ids and the text emitted so far. It never
// runs the model: the caller feeds it the logits of its last position and runs the token it
// returns.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "runtime/generator.h"
#include "runtime/grammar/grammar.h"
#include "runtime/sampling/degeneracy.h"
#include "runtime/sampling/sampler.h"
#include "runtime/sampling/stop.h"

namespace g4 {

class Sequence {
 public:
  // `decode_piece` (optional) turns a token into the text it adds (an incremental detokenizer);
  // stop strings need it. `options` must have been validated (ValidateGenerationOptions).
  Sequence(std::vector<int32_t> prompt, const GenerationOptions& options,
           std::function<std::string(int32_t)> decode_piece = {});

  struct Step {
    int32_t token = -1;   // the sampled id (-1 when nothing was sampled)
    std::string text;     // text now safe to emit (may be empty)
    bool finished = false;
  };

  // Samples from `logits` ([vocab], the last position's) after the grammar's mask, applies stop
  // ids/strings, max tokens and the degeneracy check. A grammar that allows no token at all
  // (complete, with no end id to allow) finishes the sequence with "stop", sampling nothing.
  // `room` says whether the cache can take one more position; without room the sequence
  // finishes with "length" after this token.
  Step Accept(std::span<const float> logits, bool room = true);
  // Ends the sequence ("cancelled", or another reason such as "abort").
  void Finish(const std::string& reason);

  bool finished() const { return !result_.finish_reason.empty(); }
  // The token to run next (the last sampled one); valid while !finished().
  int32_t next_token() const { return result_.tokens.back(); }
  const std::vector<int32_t>& prompt() const { return prompt_; }
  // tokens, text, finish_reason and the degeneracy verdict (stats are the caller's).
  GenerationResult& result() { return result_; }
  const GenerationResult& result() const { return result_; }

 private:
  // The logits with every token the grammar rejects at -inf (the logits themselves without an
  // active grammar); *any is false when the grammar allows nothing.
  std::span<const float> Mask(std::span<const float> logits, bool* any);

  std::vector<int32_t> prompt_;
  GenerationOptions options_;
  std::function<std::string(int32_t)> decode_piece_;
  Sampler sampler_;
  StopChecker stop_;
  DegeneracyDetector loop_check_;
  GenerationResult result_;
  // Grammar (options_.grammar): the matcher, whether it is consulted yet (a trigger token
  // starts it), and per-step scratch: the mask and the masked logits.
  std::optional<grammar::GrammarMatcher> matcher_;
  bool grammar_active_ = false;
  std::vector<uint8_t> mask_;
  std::vector<float> masked_;
};

// InvalidArgument naming the field for options Generate and the engine cannot run (a grammar
// without its vocabulary index among them).
Status ValidateGenerationOptions(const GenerationOptions& options, bool have_detokenizer);

}  // namespace g4
