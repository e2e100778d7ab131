#include "sampling_flags.h"

#include <cstdio>
#include <sstream>

#include "core/log.h"

namespace g4::cli {

void GenerationFlags::Register(CLI::App* app) {
  app->add_option("--max-tokens", max_tokens, "Most tokens to generate");
  app->add_flag("--greedy", greedy, "Argmax decoding (ignores the sampling flags)");
  app->add_option("--temperature", temperature, "Sampling temperature (0: greedy)");
  app->add_option("--top-k", top_k, "Keep the k most likely tokens (0: off)");
  app->add_option("--top-p", top_p, "Nucleus sampling mass (1: off)");
  app->add_option("--min-p", min_p, "Drop tokens below min_p * p_max (0: off)");
  app->add_option("--repetition-penalty", repetition_penalty, "HF-style, 1: off");
  app->add_option("--presence-penalty", presence_penalty, "OpenAI-style, 0: off");
  app->add_option("--frequency-penalty", frequency_penalty, "OpenAI-style, 0: off");
  app->add_option("--seed", seed, "Seed for reproducible sampling (-1: random)");
  app->add_option("--stop", stop, "Stop string (repeatable)");
  app->add_flag("--ignore-eos", ignore_eos, "Continue past the stop ids");
  app->add_flag("--stop-on-degenerate", stop_on_degenerate, "Stop when a token loop is detected");
  app->add_option("--prefill-chunk", prefill_chunk, "Prompt tokens per prefill step");
  app->add_option("--context", context, "Context to reserve (0: prompt + max tokens)");
}

GenerationOptions GenerationFlags::ToOptions(const ModelInfo& model) const {
  GenerationOptions o;
  o.max_tokens = max_tokens;
  o.sampling.greedy = greedy;
  o.sampling.temperature = temperature;
  o.sampling.top_k = top_k;
  o.sampling.top_p = top_p;
  o.sampling.min_p = min_p;
  o.sampling.repetition_penalty = repetition_penalty;
  o.sampling.presence_penalty = presence_penalty;
  o.sampling.frequency_penalty = frequency_penalty;
  if (seed >= 0) o.sampling.seed = static_cast<uint64_t>(seed);
  o.stop_ids.assign(model.eos_ids.begin(), model.eos_ids.end());
  o.stop_strings = stop;
  o.ignore_eos = ignore_eos;
  o.stop_on_degenerate = stop_on_degenerate;
  o.prefill_chunk = prefill_chunk;
  o.max_context = context;
  return o;
}

StatusOr<std::vector<int32_t>> ParseIdList(const std::string& text, const std::string& flag) {
  std::vector<int32_t> ids;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    char* end = nullptr;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    if (*end != '\0' || v < 0 || v > INT32_MAX) {
      return InvalidArgument(flag + ": '" + item + "' is not a token id");
    }
    ids.push_back(static_cast<int32_t>(v));
  }
  if (ids.empty()) return InvalidArgument(flag + ": no token ids given");
  return ids;
}

void LogGenerationSummary(const GenerationResult& r) {
  const GenerationStats& s = r.stats;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "prompt %lld tokens, prefill %.1f tok/s | generated %lld tokens, decode %.2f tok/s "
                "(decode steps only), end-to-end %.2f tok/s | finish: %s",
                static_cast<long long>(s.prompt_tokens), s.PrefillTokensPerSecond(),
                static_cast<long long>(s.generated_tokens), s.DecodeTokensPerSecond(),
                s.EndToEndTokensPerSecond(), r.finish_reason.c_str());
  LogInfo(buf);
  if (r.degeneracy.degenerate) {
    LogWarning("degenerate output: " + r.degeneracy.reason + " (from generated token " +
               std::to_string(r.degeneracy.start) + ")");
  } else {
    LogInfo("degeneracy check: ok");
  }
}

}  // namespace g4::cli
