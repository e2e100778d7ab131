// The Gemma 3 text decoder's configuration (270M, 1B, 4B, 12B, 27B; ../shared/spec/gemma3.md),
// read into the shared ModelConfig (model/config.h): from a Hugging Face config.json
// (Gemma3ForCausalLM / model_type gemma3_text, or the text_config of
// Gemma3ForConditionalGeneration / gemma3, with transformers' defaults for absent fields, old
// rope_theta / rope_local_base_freq / rope_scaling keys or transformers 5's rope_parameters) or
// from a GGUF file's gemma3.* keys (llama.cpp's). What differs from Gemma 4: every layer has head
// dim 256 and owns its K/V; sliding iff layer % 6 < 5 unless layer_types says otherwise; queries
// scaled by query_pre_attn_scalar^-0.5; no v-norm, no PLE, no layer scalar; RoPE theta 10,000 on
// sliding layers, the global theta (with linear scaling on 4B+) on full layers.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "loader/checkpoint.h"
#include "loader/gguf.h"
#include "model/config.h"

namespace g4 {

// config.json (either form) and an optional generation_config.json; `source` names the file.
StatusOr<ModelConfig> ParseGemma3Config(const nlohmann::json& config,
                                        const nlohmann::json* generation_config,
                                        const std::string& source = "config.json");

// The gemma3.* metadata of a GGUF file.
StatusOr<ModelConfig> Gemma3ConfigFromGguf(const GgufFile& file);

StatusOr<ModelConfig> Gemma3ConfigFromCheckpoint(const Checkpoint& checkpoint);

}  // namespace g4
