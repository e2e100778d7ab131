// ModelConfig from a GGUF file's gemma4 metadata (llama.cpp's keys, ../shared/spec/peers.md
// §1.2-1.4): the same per-layer expansion LoadModelConfig produces from config.json, so the
// forward pass cannot tell the formats apart.
#pragma once

#include "core/status.h"
#include "loader/gguf.h"
#include "model/config.h"

namespace g4 {

// Reads `gemma4.*` keys, the token list (vocab size, end-of-turn id) and the shapes of
// token_embd / per_layer_token_embd / rope_freqs / attn_v. InvalidArgument names the file and
// the key or tensor that is missing, mistyped or inconsistent; Unimplemented for an
// architecture other than gemma4, MoE, or layouts g4 does not run.
StatusOr<ModelConfig> Gemma4ConfigFromGguf(const GgufFile& file);

}  // namespace g4
