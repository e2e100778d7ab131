#include "model/gemma4/config.h"

#include <cstdint>

#include "model/decoder/hf_config.h"
#include "model/gemma4/gguf_config.h"

namespace g4 {
namespace {

using nlohmann::json;

// Per-layer overrides of the newer config form: per_layer_config {"i": {head_dim, ...}}.
// transformers zero-pads the keys to the widest index ("04" ... "34"), so keys are compared as
// numbers, not strings.
const json* LayerOverride(const hf::Fields& f, int i) {
  if (!f.Has("per_layer_config") || !f.Get("per_layer_config").is_object()) return nullptr;
  for (const auto& [key, value] : f.Get("per_layer_config").items()) {
    if (key.empty() || key.size() > 9 || !value.is_object()) continue;
    if (key.find_first_not_of("0123456789") != std::string::npos) continue;
    if (std::stoi(key) == i) return &value;
  }
  return nullptr;
}

Status BuildLayers(const hf::Fields& f, ModelConfig* c) {
  const int first_shared = c->first_kv_shared_layer();
  for (int i = 0; i < c->num_layers; ++i) {
    LayerConfig l;
    l.index = i;
    l.type = c->layer_types[static_cast<size_t>(i)];
    const bool full = l.type == LayerType::kFull;
    const bool k_eq_v = c->attention_k_eq_v && full;
    l.head_dim = full && c->global_head_dim > 0 ? c->global_head_dim : c->head_dim;
    l.n_kv_heads = k_eq_v ? c->num_global_kv_heads : c->num_kv_heads;
    if (const json* o = LayerOverride(f, i)) {
      hf::Fields of(*o, f.Name("per_layer_config.") + std::to_string(i) + ".");
      G4_ASSIGN_OR_RETURN(l.head_dim, of.IntOr("head_dim", l.head_dim));
      G4_ASSIGN_OR_RETURN(l.n_kv_heads, of.IntOr("num_key_value_heads", l.n_kv_heads));
    }
    l.n_heads = c->num_heads;
    l.has_v_proj = !k_eq_v;
    const bool shared = c->num_kv_shared_layers > 0 && first_shared > 0 && i >= first_shared;
    const int64_t mlp_width =
        int64_t{c->intermediate_size} * (c->double_wide_mlp && shared ? 2 : 1);
    if (mlp_width > INT32_MAX) {
      return InvalidArgument(f.Name("intermediate_size") + " = " +
                             std::to_string(c->intermediate_size) +
                             " is out of range for a double-wide MLP");
    }
    l.mlp_width = static_cast<int>(mlp_width);
    l.kv_source = KvDonor(c->layer_types, c->num_kv_shared_layers, i);
    const std::string where = f.Name("") + "layer " + std::to_string(i) + ": ";
    if (l.kv_source < 0) {
      return InvalidArgument(where + "KV-shared, but no earlier non-shared " +
                             LayerTypeName(l.type) + " layer exists to donate K/V");
    }
    if (l.head_dim <= 0 || l.head_dim % 2) {
      return InvalidArgument(where + "head_dim " + std::to_string(l.head_dim) + " must be even and > 0");
    }
    if (l.n_kv_heads <= 0 || l.n_heads % l.n_kv_heads) {
      return InvalidArgument(where + std::to_string(l.n_heads) + " query heads are not a multiple of " +
                             std::to_string(l.n_kv_heads) + " KV heads" +
                             (k_eq_v ? " (num_global_key_value_heads)" : ""));
    }
    c->layers.push_back(l);
  }
  for (const LayerConfig& l : c->layers) {
    const LayerConfig& d = c->layers[static_cast<size_t>(l.kv_source)];
    if (d.head_dim != l.head_dim || d.n_kv_heads != l.n_kv_heads) {
      return InvalidArgument(f.Name("") + "layer " + std::to_string(l.index) +
                             " shares K/V with layer " + std::to_string(d.index) +
                             " but their head dims or KV head counts differ");
    }
  }
  return Status::Ok();
}

// enable_moe_block with num_experts, top_k_experts and moe_intermediate_size (spec §2.7).
Status ParseMoe(const hf::Fields& f, const std::string& where, ModelConfig* c) {
  G4_ASSIGN_OR_RETURN(const bool moe, f.BoolOr("enable_moe_block", false));
  if (!moe) return Status::Ok();
  G4_ASSIGN_OR_RETURN(c->num_experts, f.Int("num_experts"));
  G4_ASSIGN_OR_RETURN(c->top_k_experts, f.Int("top_k_experts"));
  G4_ASSIGN_OR_RETURN(c->moe_intermediate_size, f.Int("moe_intermediate_size"));
  return ValidateMoe(*c, where,
                     {"num_experts", "moe_intermediate_size", "top_k_experts"});
}

}  // namespace

StatusOr<ModelConfig> ParseGemma4Config(const json& config, const json* generation_config,
                                       const std::string& source) {
  if (!config.is_object()) return InvalidArgument(source + ": not a JSON object");
  ModelConfig c;
  std::string top_type = config.contains("model_type") && config["model_type"].is_string()
                             ? config["model_type"].get<std::string>()
                             : "";
  if (top_type.empty() && config.contains("architectures")) {
    // An old config named only by "architectures" (model/registry.h matched it).
    top_type = config.contains("text_config") ? "gemma4" : "gemma4_text";
  }
  const json* text = &config;
  std::string where = source + ": ";
  if (top_type == "gemma4") {
    if (!config.contains("text_config") || !config["text_config"].is_object()) {
      return InvalidArgument(source + ": model_type gemma4 needs a text_config object");
    }
    text = &config["text_config"];
    where = source + ": text_config.";
  } else if (top_type != "gemma4_text") {
    return Unimplemented(source + ": unknown architecture: model_type '" + top_type +
                         "' (g4 supports gemma4 and gemma4_text)");
  }
  c.model_type = top_type;
  hf::Fields f(*text, where);
  if (f.Has("hidden_activation") &&
      f.Get("hidden_activation") != json("gelu_pytorch_tanh")) {
    return Unimplemented(where + "hidden_activation " + f.Get("hidden_activation").dump() +
                         " is not supported (expected gelu_pytorch_tanh)");
  }
  G4_ASSIGN_OR_RETURN(c.vocab_size, f.Int("vocab_size"));
  G4_ASSIGN_OR_RETURN(c.hidden_size, f.Int("hidden_size"));
  G4_ASSIGN_OR_RETURN(c.num_layers, f.Int("num_hidden_layers"));
  G4_ASSIGN_OR_RETURN(c.num_heads, f.Int("num_attention_heads"));
  G4_ASSIGN_OR_RETURN(c.num_kv_heads, f.Int("num_key_value_heads"));
  G4_ASSIGN_OR_RETURN(c.head_dim, f.Int("head_dim"));
  G4_ASSIGN_OR_RETURN(c.global_head_dim, f.IntOr("global_head_dim", 0));
  G4_ASSIGN_OR_RETURN(c.num_global_kv_heads, f.IntOr("num_global_key_value_heads", 0));
  G4_ASSIGN_OR_RETURN(c.intermediate_size, f.Int("intermediate_size"));
  G4_ASSIGN_OR_RETURN(c.double_wide_mlp, f.BoolOr("use_double_wide_mlp", false));
  G4_ASSIGN_OR_RETURN(c.attention_k_eq_v, f.BoolOr("attention_k_eq_v", false));
  G4_ASSIGN_OR_RETURN(c.num_kv_shared_layers, f.IntOr("num_kv_shared_layers", 0));
  G4_ASSIGN_OR_RETURN(c.ple_width, f.IntOr("hidden_size_per_layer_input", 0));
  G4_ASSIGN_OR_RETURN(c.ple_vocab, f.IntOr("vocab_size_per_layer_input", c.vocab_size));
  G4_ASSIGN_OR_RETURN(c.sliding_window, f.Int("sliding_window"));
  G4_ASSIGN_OR_RETURN(c.rms_norm_eps, f.DoubleOr("rms_norm_eps", 1e-6));
  G4_ASSIGN_OR_RETURN(c.final_logit_softcap, f.DoubleOr("final_logit_softcapping", 0.0));
  G4_ASSIGN_OR_RETURN(c.max_position_embeddings, f.IntOr("max_position_embeddings", 131072));
  G4_ASSIGN_OR_RETURN(c.bos_id, f.IntOr("bos_token_id", 2));
  G4_ASSIGN_OR_RETURN(c.pad_id, f.IntOr("pad_token_id", 0));
  if (c.vocab_size <= 0 || c.hidden_size <= 0 || c.num_layers <= 0 || c.num_heads <= 0 ||
      c.intermediate_size <= 0 || c.sliding_window <= 0) {
    return InvalidArgument(where + "vocab_size, hidden_size, num_hidden_layers, "
                           "num_attention_heads, intermediate_size and sliding_window must be > 0");
  }
  if (c.num_layers > kMaxModelLayers) {
    return InvalidArgument(where + "num_hidden_layers = " + std::to_string(c.num_layers) +
                           " exceeds the limit of " + std::to_string(kMaxModelLayers));
  }
  if (c.num_kv_shared_layers >= c.num_layers) {
    return InvalidArgument(where + "num_kv_shared_layers (" + std::to_string(c.num_kv_shared_layers) +
                           ") must leave at least one layer that computes K/V");
  }
  G4_RETURN_IF_ERROR(ParseMoe(f, where, &c));
  if (c.attention_k_eq_v && c.num_global_kv_heads == 0) c.num_global_kv_heads = c.num_kv_heads;
  if (c.ple_width > 0 && c.ple_vocab <= 0) {
    return InvalidArgument(where + "vocab_size_per_layer_input must be > 0 with PLE");
  }
  G4_ASSIGN_OR_RETURN(c.rope_sliding, hf::ParseRope(f, "sliding_attention", RopeConfig{}));
  G4_ASSIGN_OR_RETURN(c.rope_full,
                      hf::ParseRope(f, "full_attention",
                                RopeConfig{RopeConfig::Kind::kProportional, 1e6, 0.25, 1.0}));
  G4_ASSIGN_OR_RETURN(c.layer_types,
                      hf::ParseLayerTypes(f, c.num_layers, 6, /*force_last_full=*/true));
  G4_RETURN_IF_ERROR(BuildLayers(f, &c));

  c.eos_ids = hf::EosIds(config, f, generation_config);
  return c;
}

StatusOr<ModelConfig> Gemma4ConfigFromCheckpoint(const Checkpoint& checkpoint) {
  if (checkpoint.is_gguf()) return Gemma4ConfigFromGguf(*checkpoint.gguf());
  if (!checkpoint.config()) {
    return NotFound(checkpoint.FilePath("config.json") + ": missing (not a checkpoint directory?)");
  }
  return ParseGemma4Config(*checkpoint.config(), checkpoint.generation_config(),
                           checkpoint.FilePath("config.json"));
}

}  // namespace g4
