#include "model/gemma4/tensors.h"

namespace g4 {

std::vector<TensorSlot> ListTensors(const ModelConfig& c, ModelWeights* w) {
  using Init = TensorSlot::Init;
  const int64_t H = c.hidden_size, V = c.vocab_size, L = c.num_layers, P = c.ple_width;
  std::vector<TensorSlot> s;
  if (w) w->layers.resize(static_cast<size_t>(L));
  auto at = [w](TensorView ModelWeights::*m) { return w ? &(w->*m) : nullptr; };

  AddSlot(&s, "embed_tokens.weight", {V, H}, at(&ModelWeights::embed), Init::kEmbed);
  if (P > 0) {
    AddSlot(&s, "embed_tokens_per_layer.weight", {c.ple_vocab, L * P},
            at(&ModelWeights::ple_embed), Init::kPleEmbed);
    AddSlot(&s, "per_layer_model_projection.weight", {L * P, H},
            at(&ModelWeights::ple_model_proj), Init::kLinear);
    AddSlot(&s, "per_layer_projection_norm.weight", {P}, at(&ModelWeights::ple_proj_norm),
            Init::kNorm);
  }
  AddSlot(&s, "norm.weight", {H}, at(&ModelWeights::final_norm), Init::kNorm);

  for (const LayerConfig& l : c.layers) {
    LayerWeights* lw = w ? &w->layers[static_cast<size_t>(l.index)] : nullptr;
    auto v = [lw](TensorView LayerWeights::*m) { return lw ? &(lw->*m) : nullptr; };
    const std::string p = "layers." + std::to_string(l.index) + ".";
    AppendLayerTensors(l, H, lw, &s);
    if (P > 0) {
      AddSlot(&s, p + "per_layer_input_gate.weight", {P, H}, v(&LayerWeights::ple_gate),
              Init::kPleGate);
      AddSlot(&s, p + "per_layer_projection.weight", {H, P}, v(&LayerWeights::ple_proj),
              Init::kLinear);
      AddSlot(&s, p + "post_per_layer_input_norm.weight", {H}, v(&LayerWeights::ple_norm),
              Init::kNorm);
    }
    if (c.moe()) {  // §2.7: the router and the experts beside the dense MLP
      const int64_t E = c.num_experts, I = c.moe_intermediate_size;
      AddSlot(&s, p + "pre_feedforward_layernorm_2.weight", {H}, v(&LayerWeights::pre_ff_norm_2),
              Init::kNorm);
      AddSlot(&s, p + "post_feedforward_layernorm_1.weight", {H},
              v(&LayerWeights::post_ff_norm_1), Init::kNorm);
      AddSlot(&s, p + "post_feedforward_layernorm_2.weight", {H},
              v(&LayerWeights::post_ff_norm_2), Init::kNorm);
      AddSlot(&s, p + "router.proj.weight", {E, H}, v(&LayerWeights::router_proj), Init::kLinear);
      AddSlot(&s, p + "router.scale", {H}, v(&LayerWeights::router_scale), Init::kNorm);
      AddSlot(&s, p + "router.per_expert_scale", {E}, v(&LayerWeights::per_expert_scale),
              Init::kNorm);
      const size_t first_stack = s.size();
      if (c.moe_split_gate_up) {  // GGUF ffn_gate_exps + ffn_up_exps (no HF name)
        AddSlot(&s, p + "experts.gate_proj", {E, I, H}, v(&LayerWeights::experts_gate_up),
                Init::kExperts);
        AddSlot(&s, p + "experts.up_proj", {E, I, H}, v(&LayerWeights::experts_up),
                Init::kExperts);
      } else {
        AddSlot(&s, p + "experts.gate_up_proj", {E, 2 * I, H},
                v(&LayerWeights::experts_gate_up), Init::kExperts);
      }
      AddSlot(&s, p + "experts.down_proj", {E, H, I}, v(&LayerWeights::experts_down),
              Init::kExperts);
      for (size_t i = first_stack; i < s.size(); ++i) s[i].experts_read = c.top_k_experts;
    }
    AddSlot(&s, p + "layer_scalar", {1}, v(&LayerWeights::layer_scalar), Init::kLayerScalar);
  }
  return s;
}

}  // namespace g4
