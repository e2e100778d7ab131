// ModelConfig: everything about a Gemma decoder (Gemma 4, Gemma 3) that shapes the forward
// pass, parsed once by the architecture's own reader (model/gemma4/config.h,
// model/gemma3/config.h) from config.json or GGUF metadata and expanded into one LayerConfig per
// layer, so the forward pass never re-derives head dims, KV donors or MLP widths. Fields a family
// does not have keep their "absent" defaults (no PLE, no KV sharing, scale 1).
// Spec: ../shared/spec/gemma4.md §1 (fields) and §2.5 (the donor rule); gemma3.md.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "model/causal_lm.h"

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
  std::string model_type;   // as the checkpoint says: "gemma4", "gemma4_text", "gemma3", ...
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
  int num_kv_shared_layers = 0;    // Gemma 4 E2B/E4B
  int ple_width = 0;                // hidden_size_per_layer_input; 0 = no PLE
  int ple_vocab = 0;                // vocab_size_per_layer_input
  // Mixture of experts (Gemma 4 26B-A4B, spec §2.7): every layer runs num_experts experts of
  // width moe_intermediate_size beside its dense MLP, top_k_experts per token. 0: none.
  int num_experts = 0;
  int top_k_experts = 0;
  int moe_intermediate_size = 0;
  // The experts' gate and up projections as two [E, I, H] stacks (GGUF ffn_gate_exps +
  // ffn_up_exps) instead of one [E, 2I, H] (HF gate_up_proj, GGUF ffn_gate_up_exps).
  bool moe_split_gate_up = false;
  int sliding_window = 0;
  double rms_norm_eps = 1e-6;
  double final_logit_softcap = 0.0;  // 0 = none
  // Multiplies q.k in attention. Gemma 4: 1 (q_norm/k_norm set the scale); Gemma 3:
  // query_pre_attn_scalar^-0.5.
  double attention_scale = 1.0;
  bool v_norm = true;                // Gemma 4 RMS-normalises V (no weight); Gemma 3 does not
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
  bool moe() const { return num_experts > 0; }
  int first_kv_shared_layer() const { return num_layers - num_kv_shared_layers; }
};

// The most decoder layers a config may declare (Gemma 4 31B has 60): per-layer tables are sized
// from num_hidden_layers before any weight is seen, so a hostile count must stop here.
inline constexpr int kMaxModelLayers = 1024;

// The donor of layer i under the transformers rule: the last non-shared layer of the same
// type; i itself when layer i is not KV-shared. -1 if a shared layer has no such donor.
int KvDonor(const std::vector<LayerType>& types, int num_kv_shared_layers, int i);

// The checks every reader applies to the expanded layers (even head dims, query heads a
// multiple of KV heads, a donor for every shared layer with the same shapes); messages start
// with `where` (e.g. "config.json: text_config.").
Status ValidateLayers(const ModelConfig& config, const std::string& where);

// The expert counts as a file names them (config.json's or GGUF's keys), for messages.
struct MoeFieldNames {
  const char* experts;
  const char* width;
  const char* top_k;
};

// The check every reader applies to a config with experts: num_experts > 0,
// moe_intermediate_size > 0 and 0 < top_k_experts <= min(num_experts, kMaxMoeTopK). The message
// starts with `where`, names the three fields and gives their values in that order.
Status ValidateMoe(const ModelConfig& config, const std::string& where,
                   const MoeFieldNames& names);

// The attention memory of each layer, for KV caches (model/causal_lm.h).
std::vector<KvLayout> KvLayouts(const ModelConfig& config);

}  // namespace g4
