// The Gemma 3 text decoder's tensor list, in checkpoint order: the embedding (also the tied
// head), the final norm and per layer the shared decoder tensors (decoder/weights.h). GGUF files
// use the same llama.cpp names as Gemma 4 for these (decoder/gguf_names.h).
#pragma once

#include <vector>

#include "model/config.h"
#include "model/decoder/weights.h"

namespace g4 {

std::vector<TensorSlot> ListGemma3Tensors(const ModelConfig& config, ModelWeights* w);

}  // namespace g4
