#include "model/gguf_weights.h"

#include <set>
#include <string_view>
#include <utility>

#include "core/log.h"
#include "loader/page_advice.h"

namespace g4 {
namespace {

// Slot names (model/weights.cc) and llama.cpp's gemma4 names (peers.md §1.3).
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
};

// Tensors the config reads (not bound to a slot).
constexpr std::string_view kConfigTensors[] = {"rope_freqs.weight"};

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

Status BindGgufWeights(const ModelConfig& config, const GgufFile& file, ModelWeights* w,
                       const WeightLoadOptions& options) {
  std::set<std::string> used(std::begin(kConfigTensors), std::end(kConfigTensors));
  for (const TensorSlot& slot : ListTensors(config, w)) {
    const std::string name = GgufTensorName(slot.name);
    if (name.empty()) return Internal("no GGUF name for tensor slot " + slot.name);
    used.insert(name);
    if (slot.role != TensorRole::kRequired) continue;
    const GgufTensorInfo* t = file.Find(name);
    if (!t) return NotFound(file.path() + ": missing tensor '" + name + "'");
    G4_ASSIGN_OR_RETURN(const TensorView view, GgufFile::View(*t, file.path()));
    G4_RETURN_IF_ERROR(BindView(slot, name, file.path(), view, "the GGUF metadata"));
  }
  if (const GgufTensorInfo* out = file.Find("output.weight")) {
    // An untied head; g4's head is a [V, H] view like the embedding, so it binds the same way.
    used.insert(out->name);
    TensorSlot head{"lm_head.weight", w->embed.shape, TensorRole::kRequired, &w->lm_head,
                    TensorSlot::Init::kEmbed};
    G4_ASSIGN_OR_RETURN(const TensorView view, GgufFile::View(*out, file.path()));
    G4_RETURN_IF_ERROR(BindView(head, out->name, file.path(), view, "the GGUF metadata"));
  } else {
    G4_RETURN_IF_ERROR(MakeLmHead(w, options.head.value_or(DefaultHeadMode()), options.threads));
    if (w->lm_head.data != w->embed.data) ReleaseMappedPages(w->embed.data, w->embed.nbytes());
  }
  int unused = 0;
  for (const GgufTensorInfo& t : file.tensors()) {
    if (!used.count(t.name)) {
      if (unused++ < 5) LogWarning(file.path() + ": tensor '" + t.name + "' is not used by g4");
    }
  }
  return Status::Ok();
}

}  // namespace g4
