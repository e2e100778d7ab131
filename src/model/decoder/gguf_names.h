// llama.cpp's GGUF tensor names for the slots of the Gemma decoders (../shared/spec/peers.md
// §1.3): gemma4 and gemma3 name the tensors they share alike. Norm weights are used as stored:
// llama.cpp's Gemma 4 converter applies no "+1" shift (its norm_shift is 0 for gemma4), and its
// Gemma 1-3 converter has already added the 1 that Hugging Face's x * (1 + w) adds at run time.
#pragma once

#include <string>
#include <string_view>

namespace g4 {

// The llama.cpp name of a slot name ("layers.3.self_attn.q_proj.weight" ->
// "blk.3.attn_q.weight"); empty if the slot has no GGUF counterpart.
std::string GgufTensorName(const std::string& slot_name);

// Tensors a GGUF file holds for the config readers, not for a slot (never "unused").
inline constexpr std::string_view kGgufConfigTensors[] = {"rope_freqs.weight"};

}  // namespace g4
