// The Gemma 4 text decoder's configuration: config.json (either form: model_type "gemma4" with
// text_config, or "gemma4_text") plus generation_config.json, or a GGUF file's gemma4.* keys
// (gemma4/gguf_config.h), expanded per layer into the shared ModelConfig (model/config.h).
// Spec: ../shared/spec/gemma4.md §1 (fields) and §2.5 (the donor rule).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "loader/checkpoint.h"
#include "model/config.h"

namespace g4 {

// Parses a config.json object and an optional generation_config.json object. `source` names the
// file in error messages. Refuses unknown architectures and MoE with a message that says so.
StatusOr<ModelConfig> ParseGemma4Config(const nlohmann::json& config,
                                        const nlohmann::json* generation_config,
                                        const std::string& source = "config.json");

// The config of a checkpoint: its config.json (+ generation_config.json), or its GGUF metadata.
StatusOr<ModelConfig> Gemma4ConfigFromCheckpoint(const Checkpoint& checkpoint);

}  // namespace g4
