// Readers of a Hugging Face config.json that every Gemma architecture shares: typed fields whose
// errors name the file and field path, the per-layer-type rope_parameters, layer_types and the
// eos id lists.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "model/config.h"

namespace g4::hf {

// Typed field access with messages that name the file and the field path.
class Fields {
 public:
  Fields(const nlohmann::json& obj, std::string where) : obj_(obj), where_(std::move(where)) {}

  bool Has(const char* key) const { return obj_.contains(key) && !obj_[key].is_null(); }
  const nlohmann::json& Get(const char* key) const { return obj_[key]; }
  std::string Name(const char* key) const { return where_ + key; }

  StatusOr<int> Int(const char* key) const;
  StatusOr<int> IntOr(const char* key, int fallback) const;
  StatusOr<double> DoubleOr(const char* key, double fallback) const;
  StatusOr<bool> BoolOr(const char* key, bool fallback) const;

 private:
  StatusOr<int> IntOf(const char* key) const;

  const nlohmann::json& obj_;
  std::string where_;
};

// Appends the ids of an int or int-list field (eos_token_id) to `out`, skipping duplicates.
void AddIds(const nlohmann::json& v, std::vector<int>* out);

// rope_parameters[layer_key] ("sliding_attention" / "full_attention") over `fallback`:
// rope_type default, linear (factor divides every frequency) or proportional.
StatusOr<RopeConfig> ParseRope(const Fields& f, const char* layer_key, RopeConfig fallback);

// layer_types, or the default pattern (every `pattern`-th layer full). `force_last_full`: the
// last layer is made full_attention, as transformers' Gemma 4 config does (with a warning).
StatusOr<std::vector<LayerType>> ParseLayerTypes(const Fields& f, int num_layers, int pattern,
                                                 bool force_last_full);

// The stop ids: generation_config's eos_token_id, then config.json's (top level and `text`).
std::vector<int> EosIds(const nlohmann::json& config, const Fields& text,
                        const nlohmann::json* generation_config);

}  // namespace g4::hf
