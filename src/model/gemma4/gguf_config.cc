#include "model/gemma4/gguf_config.h"

#include <cmath>
#include <string>
#include <vector>

#include "model/decoder/gguf_meta.h"

namespace g4 {
namespace {

constexpr const char* kArch = "gemma4";

// Full layers' RoPE from rope_freqs (llama.cpp's per-pair frequency divisors, [hd/2]): pairs
// with a divisor of 1e30 do not rotate; a leading run of equal finite divisors is HF's
// proportional RoPE with partial_rotary_factor = 2 * run / hd and `factor` = the divisor.
// (llama.cpp's converter writes [1.0] * int(hd * p / 2) + [1e30] * the rest.)
StatusOr<RopeConfig> FullRope(const GgufFile& f, double theta, int head_dim) {
  RopeConfig r;
  r.theta = theta;
  const GgufTensorInfo* t = f.Find("rope_freqs.weight");
  if (!t) return r;  // plain RoPE over the whole head
  const std::string where = f.path() + ": tensor 'rope_freqs.weight'";
  if (t->type.dtype != DType::kF32 || t->type.quant != QuantKind::kNone ||
      t->shape != std::vector<int64_t>{head_dim / 2}) {
    return InvalidArgument(where + " is " + t->type.name + " " + ShapeToString(t->shape) +
                           "; expected F32 [" + std::to_string(head_dim / 2) +
                           "] (half the full layers' head dim, key_length)");
  }
  const float* v = static_cast<const float*>(t->data);
  const int half = head_dim / 2;
  int rotated = 0;
  while (rotated < half && v[rotated] < 1e20f) ++rotated;
  for (int j = rotated; j < half; ++j) {
    if (!(v[j] >= 1e20f)) {
      return Unimplemented(where + ": entry " + std::to_string(j) + " = " + std::to_string(v[j]) +
                           " after the non-rotating entries (g4 runs a leading rotated run)");
    }
  }
  for (int j = 0; j < rotated; ++j) {
    if (!(v[j] > 0) || v[j] != v[0]) {
      return Unimplemented(where + ": entry " + std::to_string(j) + " = " + std::to_string(v[j]) +
                           " differs from entry 0 (per-pair RoPE scaling is not supported)");
    }
  }
  r.kind = RopeConfig::Kind::kProportional;
  r.factor = rotated > 0 ? v[0] : 1.0;
  r.partial_rotary_factor = 2.0 * rotated / head_dim;
  // InvFreq truncates partial_rotary_factor * head_dim / 2; make sure that gives `rotated`.
  while (static_cast<int>(r.partial_rotary_factor * head_dim / 2) < rotated) {
    r.partial_rotary_factor = std::nextafter(r.partial_rotary_factor, 2.0);
  }
  return r;
}

// The MoE keys (26B-A4B): expert_count, expert_used_count and expert_feed_forward_length, and
// which of llama.cpp's two gate/up layouts the file stores (blk.0 decides; binding checks the
// rest).
Status GgufMoe(const GgufFile& f, const GgufMeta& m, ModelConfig* c) {
  G4_ASSIGN_OR_RETURN(const int experts, m.IntOr("expert_count", 0));
  if (experts == 0) return Status::Ok();
  G4_ASSIGN_OR_RETURN(c->top_k_experts, m.Int("expert_used_count"));
  G4_ASSIGN_OR_RETURN(c->moe_intermediate_size, m.Int("expert_feed_forward_length"));
  c->num_experts = experts;
  G4_RETURN_IF_ERROR(ValidateMoe(
      *c, f.path() + ": ",
      {"gemma4.expert_count", "gemma4.expert_feed_forward_length", "gemma4.expert_used_count"}));
  c->moe_split_gate_up = f.Find("blk.0.ffn_gate_up_exps.weight") == nullptr &&
                         f.Find("blk.0.ffn_gate_exps.weight") != nullptr;
  return Status::Ok();
}

}  // namespace

StatusOr<ModelConfig> Gemma4ConfigFromGguf(const GgufFile& f) {
  const std::string& path = f.path();
  auto arch = f.GetString(gguf::kArchitectureKey);
  if (!arch.ok()) return arch.status();
  if (*arch != kArch) {
    return Unimplemented(path + ": general.architecture is '" + *arch +
                         "'; g4 runs gemma4 GGUF files only");
  }
  const GgufMeta m(f, kArch);
  ModelConfig c;
  c.model_type = kArch;
  G4_ASSIGN_OR_RETURN(c.num_layers, m.Int("block_count"));
  G4_ASSIGN_OR_RETURN(c.hidden_size, m.Int("embedding_length"));
  if (c.num_layers <= 0 || c.hidden_size <= 0) {
    return m.Err("gemma4.block_count and gemma4.embedding_length must be > 0");
  }
  if (c.num_layers > kMaxModelLayers) {
    // Bounds the per-layer vectors a scalar key is broadcast into.
    return m.Err("gemma4.block_count = " + std::to_string(c.num_layers) +
                 " exceeds the limit of " + std::to_string(kMaxModelLayers));
  }
  const int L = c.num_layers;
  G4_ASSIGN_OR_RETURN(const std::vector<int> n_heads, m.PerLayer("attention.head_count", L));
  G4_ASSIGN_OR_RETURN(const std::vector<int> n_kv, m.PerLayer("attention.head_count_kv", L));
  G4_ASSIGN_OR_RETURN(const std::vector<int> ff, m.PerLayer("feed_forward_length", L));
  for (int h : n_heads) {
    if (h != n_heads[0]) {
      return Unimplemented(path + ": gemma4.attention.head_count differs between layers");
    }
  }
  G4_ASSIGN_OR_RETURN(c.global_head_dim, m.Int("attention.key_length"));
  G4_ASSIGN_OR_RETURN(const int v_full, m.IntOr("attention.value_length", c.global_head_dim));
  G4_ASSIGN_OR_RETURN(c.head_dim, m.Int("attention.key_length_swa"));
  G4_ASSIGN_OR_RETURN(const int v_swa, m.IntOr("attention.value_length_swa", c.head_dim));
  if (v_full != c.global_head_dim || v_swa != c.head_dim) {
    return Unimplemented(path + ": value_length differs from key_length (g4 needs K and V head "
                         "dims equal)");
  }
  for (const char* rot : {"rope.dimension_count", "rope.dimension_count_swa"}) {
    const int hd = std::string(rot).ends_with("_swa") ? c.head_dim : c.global_head_dim;
    G4_ASSIGN_OR_RETURN(const int n_rot, m.IntOr(rot, hd));
    if (n_rot != hd) {
      return Unimplemented(path + ": gemma4." + rot + " = " + std::to_string(n_rot) +
                           " differs from the head dim " + std::to_string(hd) +
                           " (partial rotation is expressed through rope_freqs)");
    }
  }
  c.num_heads = n_heads[0];
  G4_ASSIGN_OR_RETURN(c.num_kv_shared_layers, m.IntOr("attention.shared_kv_layers", 0));
  G4_ASSIGN_OR_RETURN(c.ple_width, m.IntOr("embedding_length_per_layer_input", 0));
  G4_RETURN_IF_ERROR(GgufAttentionKeys(m, &c));
  G4_RETURN_IF_ERROR(GgufMoe(f, m, &c));
  if (c.num_heads <= 0) return m.Err("gemma4.attention.head_count must be > 0");
  if (c.num_kv_shared_layers >= L) {
    return m.Err("gemma4.attention.shared_kv_layers (" + std::to_string(c.num_kv_shared_layers) +
                 ") must leave at least one layer that computes K/V");
  }

  // Layer types: true = sliding. A scalar is broadcast, as llama.cpp does.
  const std::string pattern_key = m.Key("attention.sliding_window_pattern");
  const GgufValue* pv = f.FindValue(pattern_key);
  if (!pv) return NotFound(path + ": metadata key '" + pattern_key + "' is missing");
  std::vector<bool> sliding;
  if (pv->type == gguf::ValueType::kArray) {
    G4_ASSIGN_OR_RETURN(sliding, f.GetBoolArray(pattern_key));
    if (static_cast<int>(sliding.size()) != L) {
      return m.Err("metadata key '" + pattern_key + "' has " + std::to_string(sliding.size()) +
                   " entries; expected one per layer (" + std::to_string(L) + ")");
    }
  } else {
    G4_ASSIGN_OR_RETURN(const bool all, f.GetBool(pattern_key));
    sliding.assign(static_cast<size_t>(L), all);
  }
  for (bool s : sliding) c.layer_types.push_back(s ? LayerType::kSliding : LayerType::kFull);

  G4_RETURN_IF_ERROR(GgufVocabulary(m, &c));
  c.ple_vocab = c.vocab_size;
  if (c.ple_width > 0) {
    G4_ASSIGN_OR_RETURN(const std::vector<int64_t> ple, GgufShapeOf(f, "per_layer_token_embd.weight"));
    if (ple.size() != 2 || ple[0] <= 0 || ple[0] > (1 << 30)) {
      return InvalidArgument(path + ": tensor 'per_layer_token_embd.weight' has shape " +
                             ShapeToString(ple) + "; expected [n_vocab, block_count * " +
                             "embedding_length_per_layer_input]");
    }
    c.ple_vocab = static_cast<int>(ple[0]);
  }

  // Special ids: BOS/PAD from the tokenizer keys; end of generation = eos plus <turn|> (the
  // end of a chat turn, as config.json lists it for the released models).
  G4_RETURN_IF_ERROR(GgufSpecialIds(m, "<turn|>", &c));

  // RoPE: sliding layers plain over the whole head; full layers from rope_freqs.
  G4_ASSIGN_OR_RETURN(c.rope_sliding.theta, m.FloatOr("rope.freq_base_swa", 10000.0));
  G4_ASSIGN_OR_RETURN(const double theta_full, m.FloatOr("rope.freq_base", 1000000.0));
  if (!(c.rope_sliding.theta > 0) || !(theta_full > 0)) {
    return m.Err("gemma4.rope.freq_base and rope.freq_base_swa must be > 0");
  }
  G4_ASSIGN_OR_RETURN(c.rope_full, FullRope(f, theta_full, c.global_head_dim));

  // Per-layer expansion (config.cc's BuildLayers for the GGUF keys).
  c.num_kv_heads = n_kv[0];
  c.intermediate_size = ff[0];
  for (int i = 0; i < L; ++i) {
    LayerConfig l;
    l.index = i;
    l.type = c.layer_types[static_cast<size_t>(i)];
    l.head_dim = l.sliding() ? c.head_dim : c.global_head_dim;
    l.n_heads = c.num_heads;
    l.n_kv_heads = n_kv[static_cast<size_t>(i)];
    l.mlp_width = ff[static_cast<size_t>(i)];
    l.kv_source = KvDonor(c.layer_types, c.num_kv_shared_layers, i);
    // "K = V" layers have no attn_v: V is the raw K projection.
    l.has_v_proj = f.Find("blk." + std::to_string(i) + ".attn_v.weight") != nullptr;
    if (!l.sliding() && !l.has_v_proj) c.attention_k_eq_v = true;
    const std::string where = "layer " + std::to_string(i) + ": ";
    if (l.kv_source < 0) {
      return m.Err(where + "KV-shared, but no earlier non-shared " + LayerTypeName(l.type) +
                   " layer exists to donate K/V");
    }
    if (l.head_dim <= 0 || l.head_dim % 2) {
      return m.Err(where + "head dim " + std::to_string(l.head_dim) + " must be even and > 0");
    }
    if (l.n_kv_heads <= 0 || l.n_heads % l.n_kv_heads || l.mlp_width <= 0) {
      return m.Err(where + std::to_string(l.n_heads) + " query heads are not a multiple of " +
                   std::to_string(l.n_kv_heads) + " KV heads, or feed_forward_length is 0");
    }
    if (!l.sliding()) c.num_global_kv_heads = l.n_kv_heads;
    c.layers.push_back(l);
  }
  for (const LayerConfig& l : c.layers) {
    const LayerConfig& d = c.layers[static_cast<size_t>(l.kv_source)];
    if (d.head_dim != l.head_dim || d.n_kv_heads != l.n_kv_heads) {
      return m.Err("layer " + std::to_string(l.index) + " shares K/V with layer " +
                   std::to_string(d.index) + " but their head dims or KV head counts differ");
    }
  }
  return c;
}

}  // namespace g4
