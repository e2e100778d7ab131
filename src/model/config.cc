#include "model/config.h"

#include <cmath>
#include <cstdint>
#include <filesystem>

#include "core/log.h"
#include "loader/json_file.h"

namespace g4 {
namespace {

using nlohmann::json;

// Typed field access with messages that name the file and the field path.
class Fields {
 public:
  Fields(const json& obj, std::string where) : obj_(obj), where_(std::move(where)) {}

  bool Has(const char* key) const { return obj_.contains(key) && !obj_[key].is_null(); }
  const json& Get(const char* key) const { return obj_[key]; }
  std::string Name(const char* key) const { return where_ + key; }

  StatusOr<int> Int(const char* key) const {
    if (!Has(key)) return InvalidArgument(Name(key) + " is missing");
    return IntOf(key);
  }
  StatusOr<int> IntOr(const char* key, int fallback) const {
    if (!Has(key)) return fallback;
    return IntOf(key);
  }
  StatusOr<double> DoubleOr(const char* key, double fallback) const {
    if (!Has(key)) return fallback;
    if (!obj_[key].is_number()) return InvalidArgument(Name(key) + " must be a number");
    return obj_[key].get<double>();
  }
  StatusOr<bool> BoolOr(const char* key, bool fallback) const {
    if (!Has(key)) return fallback;
    if (!obj_[key].is_boolean()) return InvalidArgument(Name(key) + " must be true or false");
    return obj_[key].get<bool>();
  }

 private:
  StatusOr<int> IntOf(const char* key) const {
    const json& v = obj_[key];
    if (!v.is_number_integer()) return InvalidArgument(Name(key) + " must be an integer");
    const int64_t x = v.get<int64_t>();
    if (x < 0 || x > (int64_t{1} << 30)) {
      return InvalidArgument(Name(key) + " = " + std::to_string(x) + " is out of range");
    }
    return static_cast<int>(x);
  }

  const json& obj_;
  std::string where_;
};

// Appends the ids of an int or int-list field (eos_token_id) to `out`, skipping duplicates.
void AddIds(const json& v, std::vector<int>* out) {
  auto add = [out](const json& x) {
    if (!x.is_number_integer()) return;
    const int id = x.get<int>();
    for (int e : *out) if (e == id) return;
    out->push_back(id);
  };
  if (v.is_array()) {
    for (const auto& x : v) add(x);
  } else {
    add(v);
  }
}

StatusOr<RopeConfig> ParseRope(const Fields& f, const char* layer_key, RopeConfig fallback) {
  if (!f.Has("rope_parameters")) return fallback;
  const json& all = f.Get("rope_parameters");
  if (!all.is_object()) return InvalidArgument(f.Name("rope_parameters") + " must be an object");
  if (!all.contains(layer_key)) return fallback;
  const std::string where = f.Name("rope_parameters.") + layer_key + ".";
  Fields rf(all[layer_key], where);
  RopeConfig r = fallback;
  const std::string kind = rf.Has("rope_type") && rf.Get("rope_type").is_string()
                               ? rf.Get("rope_type").get<std::string>() : "default";
  if (kind == "default") {
    r.kind = RopeConfig::Kind::kDefault;
    r.partial_rotary_factor = 1.0;
  } else if (kind == "proportional") {
    r.kind = RopeConfig::Kind::kProportional;
  } else {
    return Unimplemented(where + "rope_type '" + kind +
                         "' is not supported (expected default or proportional)");
  }
  G4_ASSIGN_OR_RETURN(r.theta, rf.DoubleOr("rope_theta", fallback.theta));
  G4_ASSIGN_OR_RETURN(r.partial_rotary_factor,
                      rf.DoubleOr("partial_rotary_factor", r.partial_rotary_factor));
  G4_ASSIGN_OR_RETURN(r.factor, rf.DoubleOr("factor", 1.0));
  if (!(r.theta > 0) || !(r.factor > 0) || r.partial_rotary_factor < 0 ||
      r.partial_rotary_factor > 1) {
    return InvalidArgument(where + " has an invalid rope_theta, factor or partial_rotary_factor");
  }
  return r;
}

StatusOr<std::vector<LayerType>> ParseLayerTypes(const Fields& f, int num_layers) {
  std::vector<LayerType> types;
  if (!f.Has("layer_types")) {
    // transformers' default: every 6th layer is full (5:1).
    for (int i = 0; i < num_layers; ++i)
      types.push_back((i + 1) % 6 ? LayerType::kSliding : LayerType::kFull);
  } else {
    const json& lt = f.Get("layer_types");
    if (!lt.is_array()) return InvalidArgument(f.Name("layer_types") + " must be a list");
    if (static_cast<int>(lt.size()) != num_layers) {
      return InvalidArgument(f.Name("layer_types") + " has " + std::to_string(lt.size()) +
                             " entries but num_hidden_layers is " + std::to_string(num_layers));
    }
    for (size_t i = 0; i < lt.size(); ++i) {
      const std::string s = lt[i].is_string() ? lt[i].get<std::string>() : "";
      if (s == "sliding_attention") {
        types.push_back(LayerType::kSliding);
      } else if (s == "full_attention") {
        types.push_back(LayerType::kFull);
      } else {
        return InvalidArgument(f.Name("layer_types") + "[" + std::to_string(i) + "] = " +
                               lt[i].dump() + " (expected sliding_attention or full_attention)");
      }
    }
  }
  if (!types.empty() && types.back() != LayerType::kFull) {
    // transformers forces the last layer to full attention; do what the reference runs.
    LogWarning(f.Name("layer_types") + ": the last layer is forced to full_attention, as in transformers");
    types.back() = LayerType::kFull;
  }
  return types;
}

// Per-layer overrides of the newer config form: per_layer_config {"i": {head_dim, ...}}.
// transformers zero-pads the keys to the widest index ("04" ... "34"), so keys are compared as
// numbers, not strings.
const json* LayerOverride(const Fields& f, int i) {
  if (!f.Has("per_layer_config") || !f.Get("per_layer_config").is_object()) return nullptr;
  for (const auto& [key, value] : f.Get("per_layer_config").items()) {
    if (key.empty() || key.size() > 9 || !value.is_object()) continue;
    if (key.find_first_not_of("0123456789") != std::string::npos) continue;
    if (std::stoi(key) == i) return &value;
  }
  return nullptr;
}

Status BuildLayers(const Fields& f, ModelConfig* c) {
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
      Fields of(*o, f.Name("per_layer_config.") + std::to_string(i) + ".");
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

}  // namespace

const char* LayerTypeName(LayerType t) {
  return t == LayerType::kSliding ? "sliding_attention" : "full_attention";
}

int KvDonor(const std::vector<LayerType>& types, int num_kv_shared_layers, int i) {
  const int n = static_cast<int>(types.size());
  const int first_shared = n - num_kv_shared_layers;
  if (num_kv_shared_layers <= 0 || first_shared <= 0 || i < first_shared) return i;
  for (int j = first_shared - 1; j >= 0; --j) {
    if (types[static_cast<size_t>(j)] == types[static_cast<size_t>(i)]) return j;
  }
  return -1;
}

std::vector<float> ModelConfig::InvFreq(const LayerConfig& l) const {
  const RopeConfig& r = rope(l);
  const int half = l.head_dim / 2;
  const int rotated = r.kind == RopeConfig::Kind::kProportional
                          ? static_cast<int>(r.partial_rotary_factor * l.head_dim / 2)
                          : half;
  std::vector<float> inv(static_cast<size_t>(half), 0.0f);
  for (int j = 0; j < rotated && j < half; ++j) {
    inv[static_cast<size_t>(j)] =
        static_cast<float>(std::pow(r.theta, -2.0 * j / l.head_dim) / r.factor);
  }
  return inv;
}

StatusOr<ModelConfig> ParseModelConfig(const json& config, const json* generation_config,
                                       const std::string& source) {
  if (!config.is_object()) return InvalidArgument(source + ": not a JSON object");
  ModelConfig c;
  const std::string top_type =
      config.contains("model_type") && config["model_type"].is_string()
          ? config["model_type"].get<std::string>() : "";
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
  Fields f(*text, where);
  G4_ASSIGN_OR_RETURN(const bool moe, f.BoolOr("enable_moe_block", false));
  if (moe) {
    return Unimplemented(where + "enable_moe_block: MoE checkpoints (Gemma 4 26B-A4B) are not "
                         "supported yet");
  }
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
  if (c.attention_k_eq_v && c.num_global_kv_heads == 0) c.num_global_kv_heads = c.num_kv_heads;
  if (c.ple_width > 0 && c.ple_vocab <= 0) {
    return InvalidArgument(where + "vocab_size_per_layer_input must be > 0 with PLE");
  }
  G4_ASSIGN_OR_RETURN(c.rope_sliding, ParseRope(f, "sliding_attention", RopeConfig{}));
  G4_ASSIGN_OR_RETURN(c.rope_full,
                      ParseRope(f, "full_attention",
                                RopeConfig{RopeConfig::Kind::kProportional, 1e6, 0.25, 1.0}));
  G4_ASSIGN_OR_RETURN(c.layer_types, ParseLayerTypes(f, c.num_layers));
  G4_RETURN_IF_ERROR(BuildLayers(f, &c));

  if (generation_config && generation_config->is_object() &&
      generation_config->contains("eos_token_id")) {
    AddIds((*generation_config)["eos_token_id"], &c.eos_ids);
  }
  if (config.contains("eos_token_id")) AddIds(config["eos_token_id"], &c.eos_ids);
  if (f.Has("eos_token_id")) AddIds(f.Get("eos_token_id"), &c.eos_ids);
  return c;
}

StatusOr<ModelConfig> LoadModelConfig(const std::string& dir) {
  namespace fs = std::filesystem;
  const std::string config_path = (fs::path(dir) / "config.json").string();
  G4_ASSIGN_OR_RETURN(json config, ReadJsonFile(config_path));
  const std::string gen_path = (fs::path(dir) / "generation_config.json").string();
  std::optional<json> gen;
  std::error_code ec;
  if (fs::exists(gen_path, ec)) {
    G4_ASSIGN_OR_RETURN(gen, ReadJsonFile(gen_path));
  }
  return ParseModelConfig(config, gen ? &*gen : nullptr, config_path);
}

}  // namespace g4
