// The Gemma 4 text decoder's tensor list: every tensor (name, shape from the config, role) in
// checkpoint order. One list drives loading (decoder/weights.h's binder, both file formats),
// validation and the synthetic checkpoint writers.
#pragma once

#include <vector>

#include "model/config.h"
#include "model/decoder/weights.h"

namespace g4 {

// Every tensor of the text decoder for `config`, in checkpoint order. `w` may be null when only
// the names and shapes are wanted; otherwise slots point into *w (which must outlive them).
std::vector<TensorSlot> ListTensors(const ModelConfig& config, ModelWeights* w);

}  // namespace g4
