// Binds a GGUF file's tensors (llama.cpp's gemma4 names, ../shared/spec/peers.md §1.3) to the
// same slot list the safetensors loader fills (ListTensors), with the same shape checks
// (BindView): one model definition, two file formats. Norm weights are used as stored, as from
// safetensors: llama.cpp's Gemma 4 converter applies no "+1" shift (its norm_shift is 0 for
// gemma4, unlike Gemma 1-3), which the F32 fixture test confirms end to end.
#pragma once

#include <string>

#include "core/status.h"
#include "loader/gguf.h"
#include "model/config.h"
#include "model/weights.h"

namespace g4 {

// The llama.cpp name of a slot name ("layers.3.self_attn.q_proj.weight" ->
// "blk.3.attn_q.weight"); empty if the slot has no GGUF counterpart.
std::string GgufTensorName(const std::string& slot_name);

// Binds every required slot; errors name the GGUF tensor, the file and the expected and found
// shapes. Logs a warning for tensors of the file that no slot reads. A separate output.weight
// becomes the LM head; otherwise the head is made from the tied embedding (MakeLmHead).
Status BindGgufWeights(const ModelConfig& config, const GgufFile& file, ModelWeights* w,
                       const WeightLoadOptions& options = {});

}  // namespace g4
