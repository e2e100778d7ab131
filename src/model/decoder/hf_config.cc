#include "model/decoder/hf_config.h"

#include <cstdint>

#include "core/log.h"

namespace g4::hf {

using nlohmann::json;

StatusOr<int> Fields::Int(const char* key) const {
  if (!Has(key)) return InvalidArgument(Name(key) + " is missing");
  return IntOf(key);
}

StatusOr<int> Fields::IntOr(const char* key, int fallback) const {
  if (!Has(key)) return fallback;
  return IntOf(key);
}

StatusOr<double> Fields::DoubleOr(const char* key, double fallback) const {
  if (!Has(key)) return fallback;
  if (!obj_[key].is_number()) return InvalidArgument(Name(key) + " must be a number");
  return obj_[key].get<double>();
}

StatusOr<bool> Fields::BoolOr(const char* key, bool fallback) const {
  if (!Has(key)) return fallback;
  if (!obj_[key].is_boolean()) return InvalidArgument(Name(key) + " must be true or false");
  return obj_[key].get<bool>();
}

StatusOr<int> Fields::IntOf(const char* key) const {
  const json& v = obj_[key];
  if (!v.is_number_integer()) return InvalidArgument(Name(key) + " must be an integer");
  const int64_t x = v.get<int64_t>();
  if (x < 0 || x > (int64_t{1} << 30)) {
    return InvalidArgument(Name(key) + " = " + std::to_string(x) + " is out of range");
  }
  return static_cast<int>(x);
}

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
  if (kind == "default" || kind == "linear") {  // linear: `factor` divides every frequency
    r.kind = RopeConfig::Kind::kDefault;
    r.partial_rotary_factor = 1.0;
  } else if (kind == "proportional") {
    r.kind = RopeConfig::Kind::kProportional;
  } else {
    return Unimplemented(where + "rope_type '" + kind +
                         "' is not supported (expected default, linear or proportional)");
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

StatusOr<std::vector<LayerType>> ParseLayerTypes(const Fields& f, int num_layers, int pattern,
                                                 bool force_last_full) {
  std::vector<LayerType> types;
  if (!f.Has("layer_types")) {
    // transformers' default: every pattern-th layer is full (5:1 for Gemma 3 and 4).
    for (int i = 0; i < num_layers; ++i)
      types.push_back((i + 1) % pattern ? LayerType::kSliding : LayerType::kFull);
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
  if (force_last_full && !types.empty() && types.back() != LayerType::kFull) {
    // transformers forces the last layer to full attention; do what the reference runs.
    LogWarning(f.Name("layer_types") + ": the last layer is forced to full_attention, as in transformers");
    types.back() = LayerType::kFull;
  }
  return types;
}

std::vector<int> EosIds(const json& config, const Fields& text, const json* generation_config) {
  std::vector<int> ids;
  if (generation_config && generation_config->is_object() &&
      generation_config->contains("eos_token_id")) {
    AddIds((*generation_config)["eos_token_id"], &ids);
  }
  if (config.contains("eos_token_id")) AddIds(config["eos_token_id"], &ids);
  if (text.Has("eos_token_id")) AddIds(text.Get("eos_token_id"), &ids);
  return ids;
}

}  // namespace g4::hf
