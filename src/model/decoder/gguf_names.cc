#include "model/decoder/gguf_names.h"

#include <string_view>
#include <utility>

namespace g4 {
namespace {

// Slot names and llama.cpp's names (peers.md §1.3; Gemma 3 uses the subset without PLE and
// layer_output_scale).
constexpr std::pair<std::string_view, std::string_view> kGlobalNames[] = {
    {"embed_tokens.weight", "token_embd.weight"},
    {"embed_tokens_per_layer.weight", "per_layer_token_embd.weight"},
    {"per_layer_model_projection.weight", "per_layer_model_proj.weight"},
    {"per_layer_projection_norm.weight", "per_layer_proj_norm.weight"},
    {"norm.weight", "output_norm.weight"},
};
constexpr std::pair<std::string_view, std::string_view> kLayerNames[] = {
    {"input_layernorm.weight", "attn_norm.weight"},
    {"post_attention_layernorm.weight", "post_attention_norm.weight"},
    {"pre_feedforward_layernorm.weight", "ffn_norm.weight"},
    {"post_feedforward_layernorm.weight", "post_ffw_norm.weight"},
    {"self_attn.q_proj.weight", "attn_q.weight"},
    {"self_attn.q_norm.weight", "attn_q_norm.weight"},
    {"self_attn.k_proj.weight", "attn_k.weight"},
    {"self_attn.k_norm.weight", "attn_k_norm.weight"},
    {"self_attn.v_proj.weight", "attn_v.weight"},
    {"self_attn.o_proj.weight", "attn_output.weight"},
    {"mlp.gate_proj.weight", "ffn_gate.weight"},
    {"mlp.up_proj.weight", "ffn_up.weight"},
    {"mlp.down_proj.weight", "ffn_down.weight"},
    {"per_layer_input_gate.weight", "inp_gate.weight"},
    {"per_layer_projection.weight", "proj.weight"},
    {"post_per_layer_input_norm.weight", "post_norm.weight"},
    {"layer_scalar", "layer_output_scale.weight"},
    // Gemma 4 MoE: router, expert stacks ([in, out, n_expert] in the file) and branch norms.
    {"router.proj.weight", "ffn_gate_inp.weight"},
    {"router.scale", "ffn_gate_inp.scale"},
    {"router.per_expert_scale", "ffn_down_exps.scale"},
    {"experts.gate_up_proj", "ffn_gate_up_exps.weight"},
    {"experts.gate_proj", "ffn_gate_exps.weight"},
    {"experts.up_proj", "ffn_up_exps.weight"},
    {"experts.down_proj", "ffn_down_exps.weight"},
    {"pre_feedforward_layernorm_2.weight", "pre_ffw_norm_2.weight"},
    {"post_feedforward_layernorm_1.weight", "post_ffw_norm_1.weight"},
    {"post_feedforward_layernorm_2.weight", "post_ffw_norm_2.weight"},
};

}  // namespace

std::string GgufTensorName(const std::string& slot_name) {
  for (const auto& [ours, theirs] : kGlobalNames) {
    if (slot_name == ours) return std::string(theirs);
  }
  constexpr std::string_view kLayers = "layers.";
  if (!slot_name.starts_with(kLayers)) return "";
  const size_t dot = slot_name.find('.', kLayers.size());
  if (dot == std::string::npos) return "";
  const std::string index = slot_name.substr(kLayers.size(), dot - kLayers.size());
  const std::string_view rest = std::string_view(slot_name).substr(dot + 1);
  for (const auto& [ours, theirs] : kLayerNames) {
    if (rest == ours) return "blk." + index + "." + std::string(theirs);
  }
  return "";
}

}  // namespace g4
