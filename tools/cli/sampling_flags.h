// Generation flags shared by `g4 generate` and `g4 run` (and the parsing of id lists).
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "model/causal_lm.h"
#include "runtime/generator.h"

namespace g4::cli {

struct GenerationFlags {
  int max_tokens = 128;
  bool greedy = false;
  float temperature = 1.0f;
  int top_k = 64;  // Gemma 4's generation_config defaults: temperature 1, top_k 64, top_p 0.95
  float top_p = 0.95f;
  float min_p = 0.0f;
  float repetition_penalty = 1.0f, presence_penalty = 0.0f, frequency_penalty = 0.0f;
  int64_t seed = -1;  // -1: random
  bool ignore_eos = false;
  bool stop_on_degenerate = false;
  int prefill_chunk = kDefaultPrefillChunk;
  int context = 0;
  std::vector<std::string> stop;

  // Registers the flags; a value out of range fails the parse with an error naming its flag.
  void Register(CLI::App* app);
  Status Validate() const;
  // The sampling flags as the sampler takes them (ToOptions and Validate share this).
  SamplingParams Sampling() const;
  // Options with the checkpoint's stop ids.
  GenerationOptions ToOptions(const ModelInfo& model) const;
};

// "2,17,33" -> ids; `flag` names the option in errors.
StatusOr<std::vector<int32_t>> ParseIdList(const std::string& text, const std::string& flag);

// Prompt tokens, prefill / decode / end-to-end tok/s and the degeneracy verdict, on stderr.
void LogGenerationSummary(const GenerationResult& r);

}  // namespace g4::cli
