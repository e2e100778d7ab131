#include "model/weights.h"

namespace g4 {

std::vector<TensorSlot> ListTensors(const ModelConfig& c, ModelWeights* w) {
  using Init = TensorSlot::Init;
  const int64_t H = c.hidden_size, V = c.vocab_size, L = c.num_layers, P = c.ple_width;
  std::vector<TensorSlot> s;
  auto add = [&s](std::string name, std::vector<int64_t> shape, TensorView* view, Init init,
                  TensorRole role = TensorRole::kRequired) {
    s.push_back(TensorSlot{std::move(name), std::move(shape), role,
                           role == TensorRole::kRequired ? view : nullptr, init});
  };
  if (w) w->layers.resize(static_cast<size_t>(L));
  auto at = [w](TensorView ModelWeights::*m) { return w ? &(w->*m) : nullptr; };

  add("embed_tokens.weight", {V, H}, at(&ModelWeights::embed), Init::kEmbed);
  if (P > 0) {
    add("embed_tokens_per_layer.weight", {c.ple_vocab, L * P}, at(&ModelWeights::ple_embed),
        Init::kPleEmbed);
    add("per_layer_model_projection.weight", {L * P, H}, at(&ModelWeights::ple_model_proj),
        Init::kLinear);
    add("per_layer_projection_norm.weight", {P}, at(&ModelWeights::ple_proj_norm), Init::kNorm);
  }
  add("norm.weight", {H}, at(&ModelWeights::final_norm), Init::kNorm);

  for (const LayerConfig& l : c.layers) {
    LayerWeights* lw = w ? &w->layers[static_cast<size_t>(l.index)] : nullptr;
    auto v = [lw](TensorView LayerWeights::*m) { return lw ? &(lw->*m) : nullptr; };
    const std::string p = "layers." + std::to_string(l.index) + ".";
    const int64_t hd = l.head_dim, q_out = int64_t{l.n_heads} * hd, kv_out = int64_t{l.n_kv_heads} * hd;
    const int64_t I = l.mlp_width;
    // KV-shared layers carry k/v tensors in released files; they must never be read.
    const TensorRole kv_role = l.kv_shared() ? TensorRole::kUnused : TensorRole::kRequired;
    add(p + "input_layernorm.weight", {H}, v(&LayerWeights::input_norm), Init::kNorm);
    add(p + "post_attention_layernorm.weight", {H}, v(&LayerWeights::post_attn_norm), Init::kNorm);
    add(p + "pre_feedforward_layernorm.weight", {H}, v(&LayerWeights::pre_ff_norm), Init::kNorm);
    add(p + "post_feedforward_layernorm.weight", {H}, v(&LayerWeights::post_ff_norm), Init::kNorm);
    add(p + "self_attn.q_proj.weight", {q_out, H}, v(&LayerWeights::q_proj), Init::kLinear);
    add(p + "self_attn.q_norm.weight", {hd}, v(&LayerWeights::q_norm), Init::kQkNorm);
    add(p + "self_attn.k_proj.weight", {kv_out, H}, v(&LayerWeights::k_proj), Init::kLinear, kv_role);
    add(p + "self_attn.k_norm.weight", {hd}, v(&LayerWeights::k_norm), Init::kQkNorm, kv_role);
    if (l.has_v_proj) {
      add(p + "self_attn.v_proj.weight", {kv_out, H}, v(&LayerWeights::v_proj), Init::kLinear,
          kv_role);
    }
    add(p + "self_attn.o_proj.weight", {H, q_out}, v(&LayerWeights::o_proj), Init::kLinear);
    add(p + "mlp.gate_proj.weight", {I, H}, v(&LayerWeights::gate_proj), Init::kLinear);
    add(p + "mlp.up_proj.weight", {I, H}, v(&LayerWeights::up_proj), Init::kLinear);
    add(p + "mlp.down_proj.weight", {H, I}, v(&LayerWeights::down_proj), Init::kLinear);
    if (P > 0) {
      add(p + "per_layer_input_gate.weight", {P, H}, v(&LayerWeights::ple_gate), Init::kPleGate);
      add(p + "per_layer_projection.weight", {H, P}, v(&LayerWeights::ple_proj), Init::kLinear);
      add(p + "post_per_layer_input_norm.weight", {H}, v(&LayerWeights::ple_norm), Init::kNorm);
    }
    add(p + "layer_scalar", {1}, v(&LayerWeights::layer_scalar), Init::kLayerScalar);
  }
  return s;
}

StatusOr<std::string> FindTextPrefix(const WeightStore& store) {
  for (const char* prefix : {"model.language_model.", "model."}) {
    if (store.Find(std::string(prefix) + "embed_tokens.weight")) return std::string(prefix);
  }
  return NotFound("missing tensor model.language_model.embed_tokens.weight (also looked for "
                  "model.embed_tokens.weight): not a Gemma 4 text checkpoint?");
}

Status BindWeights(const ModelConfig& config, const WeightStore& store, ModelWeights* w) {
  G4_ASSIGN_OR_RETURN(const std::string prefix, FindTextPrefix(store));
  for (const TensorSlot& slot : ListTensors(config, w)) {
    if (slot.role != TensorRole::kRequired) continue;
    const std::string name = prefix + slot.name;
    const TensorInfo* t = store.Find(name);
    if (!t) return NotFound("missing tensor " + name);
    if (!IsFloat(t->dtype)) {
      return InvalidArgument("tensor " + name + " (" + t->file + ") has dtype " +
                             DTypeName(t->dtype) + "; expected F32, BF16 or F16");
    }
    if (t->shape != slot.shape) {
      return InvalidArgument("tensor " + name + " (" + t->file + ") has shape " +
                             ShapeToString(t->shape) + "; expected " + ShapeToString(slot.shape) +
                             " from config.json");
    }
    *slot.view = t->view();
  }
  w->lm_head = w->embed;  // tied (spec §2.9): a lm_head.weight in the file is a duplicate
  return Status::Ok();
}

}  // namespace g4
