#include "runtime/generator.h"

#include <algorithm>
#include <chrono>

#include "runtime/sequence.h"

namespace g4 {
namespace {

using Clock = std::chrono::steady_clock;
double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace

StatusOr<GenerationResult> Generate(const CausalLM& model, Backend& backend,
                                    std::span<const int32_t> prompt,
                                    const GenerationOptions& o,
                                    const GenerationCallbacks& cb) {
  const ModelInfo& c = model.info();
  G4_RETURN_IF_ERROR(ValidateGenerationOptions(o, static_cast<bool>(cb.decode_piece)));
  const int64_t T = static_cast<int64_t>(prompt.size());
  if (T == 0) return InvalidArgument("empty prompt: at least one token id is needed");
  const int64_t context = std::min<int64_t>(o.max_context > 0 ? o.max_context : T + o.max_tokens,
                                            c.max_context);
  if (T > context) {
    return InvalidArgument("prompt of " + std::to_string(T) + " tokens is longer than the context of " +
                           std::to_string(context) + " tokens");
  }
  G4_ASSIGN_OR_RETURN(std::unique_ptr<SequenceKvCache> cache,
                      SequenceKvCache::Create(c.layers, static_cast<int>(context), backend.memory(),
                                              backend.kv_dtype()));
  if (cb.on_info) cb.on_info(cache->Describe());
  return GenerateInCache(model, backend, *cache, prompt, o, cb);
}

StatusOr<GenerationResult> GenerateInCache(const CausalLM& model, Backend& backend,
                                           SequenceKvCache& cache,
                                           std::span<const int32_t> prompt,
                                           const GenerationOptions& o,
                                           const GenerationCallbacks& cb) {
  const auto t0 = Clock::now();
  G4_RETURN_IF_ERROR(ValidateGenerationOptions(o, static_cast<bool>(cb.decode_piece)));
  const int64_t T = static_cast<int64_t>(prompt.size());
  const int64_t cached = cache.size();
  if (cached >= T) {
    return InvalidArgument("the cache holds " + std::to_string(cached) +
                           " positions: the prompt of " + std::to_string(T) +
                           " tokens must extend it by at least one");
  }
  G4_ASSIGN_OR_RETURN(std::vector<float> logits,
                      Prefill(model, backend, cache, prompt.subspan(static_cast<size_t>(cached)),
                              o.prefill_chunk, false, cb.on_prefill_progress));
  GenerationStats stats;
  stats.prompt_tokens = T;
  stats.cached_tokens = cached;
  stats.prefill_seconds = Seconds(t0, Clock::now());

  Sequence seq(std::vector<int32_t>(prompt.begin(), prompt.end()), o, cb.decode_piece);
  StepGraphs graphs;  // decode steps recorded once and replayed, where the backend can
  while (!seq.finished()) {
    const Sequence::Step step = seq.Accept(logits, cache.size() < cache.max_context());
    if (cb.on_token && (!step.text.empty() || step.token >= 0) && !cb.on_token(step.token, step.text)) {
      seq.Finish("cancelled");
    }
    if (seq.finished()) break;
    const auto t_step = Clock::now();  // decode steps alone: the decode-speed gauge
    const int32_t one[] = {seq.next_token()};
    CausalLM::ForwardOptions step_options;
    step_options.start_pos = cache.size();
    step_options.cache = &cache;
    step_options.last_logits_only = true;
    step_options.graphs = &graphs;
    G4_ASSIGN_OR_RETURN(logits, model.Forward(backend, one, step_options));
    stats.decode_seconds += Seconds(t_step, Clock::now());
    ++stats.decode_steps;
  }
  GenerationResult r = std::move(seq.result());
  stats.generated_tokens = static_cast<int64_t>(r.tokens.size());
  stats.total_seconds = Seconds(t0, Clock::now());
  r.stats = stats;
  return r;
}

}  // namespace g4
