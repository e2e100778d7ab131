#include "runtime/generator.h"

#include <algorithm>
#include <chrono>

#include "runtime/sampling/stop.h"

namespace g4 {
namespace {

using Clock = std::chrono::steady_clock;
double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace

StatusOr<GenerationResult> Generate(const Gemma4Model& model, Backend& backend,
                                    std::span<const int32_t> prompt,
                                    const GenerationOptions& o,
                                    const GenerationCallbacks& cb) {
  const auto t0 = Clock::now();
  const ModelConfig& c = model.config();
  G4_RETURN_IF_ERROR(o.sampling.Validate());
  G4_RETURN_IF_ERROR(o.degeneracy.Validate());
  if (o.max_tokens < 0) return InvalidArgument("max_tokens must be >= 0");
  if (!o.stop_strings.empty() && !cb.decode_piece) {
    return InvalidArgument("stop strings need a detokenizer (decode_piece)");
  }
  const int64_t T = static_cast<int64_t>(prompt.size());
  if (T == 0) return InvalidArgument("empty prompt: at least one token id is needed");
  const int64_t context = o.max_context > 0 ? o.max_context : T + o.max_tokens;
  if (T > std::min<int64_t>(context, c.max_position_embeddings)) {
    return InvalidArgument("prompt of " + std::to_string(T) + " tokens is longer than the context of " +
                           std::to_string(std::min<int64_t>(context, c.max_position_embeddings)) +
                           " tokens");
  }
  G4_ASSIGN_OR_RETURN(
      std::unique_ptr<SequenceKvCache> cache,
      SequenceKvCache::Create(c, static_cast<int>(std::min<int64_t>(context, c.max_position_embeddings))));
  if (cb.on_info) cb.on_info(cache->Describe());

  GenerationResult r;
  r.stats.prompt_tokens = T;
  G4_ASSIGN_OR_RETURN(std::vector<float> logits,
                      Prefill(model, backend, *cache, prompt, o.prefill_chunk, false,
                              cb.on_prefill_progress));
  const auto t_prefill = Clock::now();
  r.stats.prefill_seconds = Seconds(t0, t_prefill);

  Sampler sampler(o.sampling);
  StopChecker stop(o.stop_ids, o.stop_strings, o.ignore_eos);
  DegeneracyDetector loop_check(o.degeneracy);
  r.finish_reason = "length";
  for (int k = 0; k < o.max_tokens; ++k) {
    const int32_t token = sampler.Sample(logits, prompt, r.tokens);
    const std::string piece = cb.decode_piece ? cb.decode_piece(token) : std::string();
    const StopResult s = stop.Feed(token, piece);
    if (s.reason != "stop_id") {
      r.tokens.push_back(token);
      loop_check.Push(token);
    }
    r.text += s.emit;
    if (cb.on_token && (s.reason != "stop_id" || !s.emit.empty()) &&
        !cb.on_token(token, s.emit)) {
      r.finish_reason = "cancelled";
      break;
    }
    if (s.stop) {
      r.finish_reason = "stop";
      break;
    }
    if (loop_check.tripped() && o.stop_on_degenerate) {
      r.finish_reason = "degenerate";
      break;
    }
    if (k + 1 == o.max_tokens) break;  // no forward pass for a token nobody will sample
    if (cache->size() >= cache->max_context()) break;  // context full: "length"
    const auto t_step = Clock::now();
    const int32_t one[] = {token};
    G4_ASSIGN_OR_RETURN(logits, Prefill(model, backend, *cache, one, 1));
    r.stats.decode_seconds += Seconds(t_step, Clock::now());
    ++r.stats.decode_steps;
  }
  if (r.finish_reason != "stop") {
    const std::string rest = stop.Flush();
    r.text += rest;
    if (!rest.empty() && cb.on_token) cb.on_token(-1, rest);
  }
  r.degeneracy = loop_check.verdict();
  r.stats.generated_tokens = static_cast<int64_t>(r.tokens.size());
  r.stats.total_seconds = Seconds(t0, Clock::now());
  return r;
}

}  // namespace g4
