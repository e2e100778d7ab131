// ModelConfig: everything about a Gemma 4 text decoder that shapes the forward pass, parsed
// once from config.json (+ generation_config.json) and expanded into one LayerConfig per layer,
// so the forward pass never re-derives head dims, KV donors or MLP widths.
// Spec: ../shared/spec/gemma4.md §1 (fields) and §2.5 (the donor rule).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace g4 {

enum class LayerType { kSliding, kFull };
const char* LayerTypeName(LayerType t);  // "sliding_attention" / "full_attention"

struct RopeConfig {
  enum class Kind { kDefault, kProportional };
  Kind kind = Kind::kDefault;
  double theta = 10000.0;
  double partial_rotary_factor = 1.0;  // proportional only
  double factor = 1.0;                 // divides every inverse frequency
};

struct LayerConfig {
  int index = 0;
  LayerType type = LayerType::kSliding;
  int head_dim = 0;
  int n_heads = 0;
  int n_kv_heads = 0;
  int mlp_width = 0;
  int kv_source = 0;        // this layer, or the donor whose K/V a KV-shared layer reads
  bool has_v_proj = true;   // false on full layers with attention_k_eq_v: V is the raw K
  bool kv_shared() const { return kv_source != index; }
  bool sliding() const { return type == LayerType::kSliding; }
};

struct ModelConfig {
  std::string model_type;   // "gemma4" (multimodal wrapper) or "gemma4_text"
  int vocab_size = 0;
  int hidden_size = 0;
  int num_layers = 0;
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
  int global_head_dim = 0;          // 0: same as head_dim
  int num_global_kv_heads = 0;      // used with attention_k_eq_v
  int intermediate_size = 0;
  bool double_wide_mlp = false;
  bool attention_k_eq_v = false;
  int num_kv_shared_layers = 0;
  int ple_width = 0;                // hidden_size_per_layer_input; 0 = no PLE
  int ple_vocab = 0;                // vocab_size_per_layer_input
  int sliding_window = 0;
  double rms_norm_eps = 1e-6;
  double final_logit_softcap = 0.0;  // 0 = none
  int max_position_embeddings = 0;
  RopeConfig rope_sliding;
  RopeConfig rope_full;
  int bos_id = 2;
  int pad_id = 0;
  std::vector<int> eos_ids;          // union of config.json and generation_config.json
  std::vector<LayerType> layer_types;
  std::vector<LayerConfig> layers;

  const RopeConfig& rope(const LayerConfig& l) const {
    return l.sliding() ? rope_sliding : rope_full;
  }
  // Inverse frequencies [head_dim / 2] of a layer's RoPE (§2.6): default theta^(-2j/d) on
  // every pair; proportional zeroes pairs j >= int(p * d / 2) and keeps d (not the rotated
  // width) in the exponent.
  std::vector<float> InvFreq(const LayerConfig& l) const;
  int first_kv_shared_layer() const { return num_layers - num_kv_shared_layers; }
};

// The most decoder layers a config may declare (Gemma 4 31B has 60): per-layer tables are sized
// from num_hidden_layers before any weight is seen, so a hostile count must stop here.
inline constexpr int kMaxModelLayers = 1024;

// Parses a config.json object (either form: model_type "gemma4" with text_config, or
// "gemma4_text") and an optional generation_config.json object. `source` names the file in
// error messages. Refuses unknown architectures and MoE with a message that says so.
StatusOr<ModelConfig> ParseModelConfig(const nlohmann::json& config,
                                       const nlohmann::json* generation_config,
                                       const std::string& source = "config.json");

// Reads DIR/config.json and, if present, DIR/generation_config.json.
StatusOr<ModelConfig> LoadModelConfig(const std::string& dir);

// The donor of layer i under the transformers rule: the last non-shared layer of the same
// type; i itself when layer i is not KV-shared. -1 if a shared layer has no such donor.
int KvDonor(const std::vector<LayerType>& types, int num_kv_shared_layers, int i);

}  // namespace g4
