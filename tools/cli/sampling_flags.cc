#include "sampling_flags.h"

#include <algorithm>
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
  // Checked once parsing is done, so the message names the flag the user typed.
  app->parse_complete_callback([this] {
    if (const Status s = Validate(); !s.ok()) throw CLI::ValidationError(s.message());
  });
}

Status GenerationFlags::Validate() const {
  auto at_least = [](const char* flag, int64_t value, int64_t least) {
    return value >= least ? Status::Ok()
                          : InvalidArgument(std::string(flag) + " must be at least " +
                                            std::to_string(least) + ", got " +
                                            std::to_string(value));
  };
  G4_RETURN_IF_ERROR(at_least("--max-tokens", max_tokens, 1));
  G4_RETURN_IF_ERROR(at_least("--prefill-chunk", prefill_chunk, 1));
  G4_RETURN_IF_ERROR(at_least("--context", context, 0));
  G4_RETURN_IF_ERROR(at_least("--seed", seed, -1));
  Status s = Sampling().Validate();
  if (s.ok()) return s;
  // The sampler names its fields ("SamplingParams.top_p must be ..."): say the flag instead.
  std::string message = s.message();
  const std::string prefix = "SamplingParams.";
  if (message.rfind(prefix, 0) == 0) {
    message = message.substr(prefix.size());
    const size_t end = message.find(' ');
    std::string field = message.substr(0, end);
    std::replace(field.begin(), field.end(), '_', '-');
    message = "--" + field + message.substr(end);
  }
  return InvalidArgument(message);
}

SamplingParams GenerationFlags::Sampling() const {
  SamplingParams p;
  p.greedy = greedy;
  p.temperature = temperature;
  p.top_k = top_k;
  p.top_p = top_p;
  p.min_p = min_p;
  p.repetition_penalty = repetition_penalty;
  p.presence_penalty = presence_penalty;
  p.frequency_penalty = frequency_penalty;
  if (seed >= 0) p.seed = static_cast<uint64_t>(seed);
  return p;
}

GenerationOptions GenerationFlags::ToOptions(const ModelInfo& model) const {
  GenerationOptions o;
  o.max_tokens = max_tokens;
  o.sampling = Sampling();
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
