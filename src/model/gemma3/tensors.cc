#include "model/gemma3/tensors.h"

namespace g4 {

std::vector<TensorSlot> ListGemma3Tensors(const ModelConfig& c, ModelWeights* w) {
  using Init = TensorSlot::Init;
  std::vector<TensorSlot> s;
  if (w) w->layers.resize(static_cast<size_t>(c.num_layers));
  AddSlot(&s, "embed_tokens.weight", {c.vocab_size, c.hidden_size}, w ? &w->embed : nullptr,
          Init::kEmbed);
  AddSlot(&s, "norm.weight", {c.hidden_size}, w ? &w->final_norm : nullptr, Init::kNorm);
  for (const LayerConfig& l : c.layers) {
    AppendLayerTensors(l, c.hidden_size, w ? &w->layers[static_cast<size_t>(l.index)] : nullptr,
                       &s);
  }
  return s;
}

}  // namespace g4
