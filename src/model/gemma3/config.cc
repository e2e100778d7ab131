#include "model/gemma3/config.h"

#include <cmath>

#include "model/decoder/gguf_meta.h"
#include "model/decoder/hf_config.h"

namespace g4 {
namespace {

using nlohmann::json;

constexpr int kSlidingPattern = 6;  // layer i is full iff (i + 1) % 6 == 0

// transformers' Gemma3TextConfig defaults (configuration_gemma3.py): released multimodal
// configs leave most text fields at these.
constexpr int kDefaultVocab = 262208, kDefaultHidden = 2304, kDefaultIntermediate = 9216,
              kDefaultLayers = 26, kDefaultHeads = 8, kDefaultKvHeads = 4, kDefaultHeadDim = 256,
              kDefaultMaxPositions = 131072, kDefaultWindow = 4096;
constexpr double kDefaultGlobalTheta = 1e6, kDefaultLocalTheta = 1e4, kDefaultQueryScalar = 256;

// Expands c->layer_types into c->layers (every layer owns its K/V, one head dim).
Status BuildLayers(const std::string& where, ModelConfig* c) {
  c->layers.clear();
  for (int i = 0; i < c->num_layers; ++i) {
    LayerConfig l;
    l.index = i;
    l.type = c->layer_types[static_cast<size_t>(i)];
    l.head_dim = c->head_dim;
    l.n_heads = c->num_heads;
    l.n_kv_heads = c->num_kv_heads;
    l.mlp_width = c->intermediate_size;
    l.kv_source = i;
    c->layers.push_back(l);
  }
  return ValidateLayers(*c, where);
}

// The linear scaling of rope_scaling ({"rope_type" or "type": "linear", "factor": F}) on top
// of `r`; other types are refused.
StatusOr<RopeConfig> ApplyRopeScaling(const hf::Fields& f, RopeConfig r) {
  if (!f.Has("rope_scaling")) return r;
  const json& s = f.Get("rope_scaling");
  if (!s.is_object()) return InvalidArgument(f.Name("rope_scaling") + " must be an object");
  hf::Fields sf(s, f.Name("rope_scaling."));
  std::string type = "default";
  for (const char* key : {"rope_type", "type"}) {
    if (sf.Has(key) && sf.Get(key).is_string()) type = sf.Get(key).get<std::string>();
  }
  if (type != "linear" && type != "default") {
    return Unimplemented(f.Name("rope_scaling") + " type '" + type +
                         "' is not supported (Gemma 3 uses linear)");
  }
  G4_ASSIGN_OR_RETURN(r.factor, sf.DoubleOr("factor", 1.0));
  if (!(r.factor > 0)) return InvalidArgument(f.Name("rope_scaling.factor") + " must be > 0");
  return r;
}

}  // namespace

StatusOr<ModelConfig> ParseGemma3Config(const json& config, const json* generation_config,
                                        const std::string& source) {
  if (!config.is_object()) return InvalidArgument(source + ": not a JSON object");
  std::string top_type = config.contains("model_type") && config["model_type"].is_string()
                             ? config["model_type"].get<std::string>()
                             : "";
  if (top_type.empty()) {  // an old config named only by "architectures" (model/registry.h)
    top_type = config.contains("text_config") ? "gemma3" : "gemma3_text";
  }
  const json* text = &config;
  std::string where = source + ": ";
  if (top_type == "gemma3") {
    if (!config.contains("text_config") || !config["text_config"].is_object()) {
      return InvalidArgument(source + ": model_type gemma3 needs a text_config object");
    }
    text = &config["text_config"];
    where = source + ": text_config.";
  } else if (top_type != "gemma3_text") {
    return Unimplemented(source + ": model_type '" + top_type +
                         "' is not a Gemma 3 text model (expected gemma3 or gemma3_text)");
  }
  ModelConfig c;
  c.model_type = top_type;
  hf::Fields f(*text, where);
  if (f.Has("hidden_activation") && f.Get("hidden_activation") != json("gelu_pytorch_tanh")) {
    return Unimplemented(where + "hidden_activation " + f.Get("hidden_activation").dump() +
                         " is not supported (expected gelu_pytorch_tanh)");
  }
  G4_ASSIGN_OR_RETURN(const bool bidirectional, f.BoolOr("use_bidirectional_attention", false));
  if (bidirectional) {
    return Unimplemented(where + "use_bidirectional_attention: embedding models are not "
                         "supported (g4 runs causal language models)");
  }
  if (f.Has("attn_logit_softcapping")) {
    return Unimplemented(where + "attn_logit_softcapping is set: attention softcapping (Gemma 2) "
                         "is not supported");
  }
  G4_ASSIGN_OR_RETURN(c.vocab_size, f.IntOr("vocab_size", kDefaultVocab));
  G4_ASSIGN_OR_RETURN(c.hidden_size, f.IntOr("hidden_size", kDefaultHidden));
  G4_ASSIGN_OR_RETURN(c.intermediate_size, f.IntOr("intermediate_size", kDefaultIntermediate));
  G4_ASSIGN_OR_RETURN(c.num_layers, f.IntOr("num_hidden_layers", kDefaultLayers));
  G4_ASSIGN_OR_RETURN(c.num_heads, f.IntOr("num_attention_heads", kDefaultHeads));
  G4_ASSIGN_OR_RETURN(c.num_kv_heads, f.IntOr("num_key_value_heads", kDefaultKvHeads));
  G4_ASSIGN_OR_RETURN(c.head_dim, f.IntOr("head_dim", kDefaultHeadDim));
  G4_ASSIGN_OR_RETURN(c.max_position_embeddings,
                      f.IntOr("max_position_embeddings", kDefaultMaxPositions));
  G4_ASSIGN_OR_RETURN(c.sliding_window, f.IntOr("sliding_window", kDefaultWindow));
  G4_ASSIGN_OR_RETURN(c.rms_norm_eps, f.DoubleOr("rms_norm_eps", 1e-6));
  G4_ASSIGN_OR_RETURN(c.final_logit_softcap, f.DoubleOr("final_logit_softcapping", 0.0));
  G4_ASSIGN_OR_RETURN(const double query_scalar,
                      f.DoubleOr("query_pre_attn_scalar", kDefaultQueryScalar));
  G4_ASSIGN_OR_RETURN(c.bos_id, f.IntOr("bos_token_id", 2));
  G4_ASSIGN_OR_RETURN(c.pad_id, f.IntOr("pad_token_id", 0));
  G4_ASSIGN_OR_RETURN(const int pattern, f.IntOr("sliding_window_pattern", kSlidingPattern));
  if (c.vocab_size <= 0 || c.hidden_size <= 0 || c.num_layers <= 0 || c.num_heads <= 0 ||
      c.intermediate_size <= 0 || c.sliding_window <= 0 || c.max_position_embeddings <= 0 ||
      pattern <= 0 || !(query_scalar > 0)) {
    return InvalidArgument(where + "vocab_size, hidden_size, num_hidden_layers, "
                           "num_attention_heads, intermediate_size, sliding_window, "
                           "max_position_embeddings, sliding_window_pattern and "
                           "query_pre_attn_scalar must be > 0");
  }
  if (c.num_layers > kMaxModelLayers) {
    return InvalidArgument(where + "num_hidden_layers = " + std::to_string(c.num_layers) +
                           " exceeds the limit of " + std::to_string(kMaxModelLayers));
  }
  c.attention_scale = 1.0 / std::sqrt(query_scalar);
  c.v_norm = false;
  // RoPE: transformers 5's rope_parameters per layer type, over the older keys (rope_theta and
  // rope_scaling for full layers, rope_local_base_freq for sliding ones).
  RopeConfig full, sliding;
  G4_ASSIGN_OR_RETURN(full.theta, f.DoubleOr("rope_theta", kDefaultGlobalTheta));
  G4_ASSIGN_OR_RETURN(sliding.theta, f.DoubleOr("rope_local_base_freq", kDefaultLocalTheta));
  G4_ASSIGN_OR_RETURN(full, ApplyRopeScaling(f, full));
  G4_ASSIGN_OR_RETURN(c.rope_full, hf::ParseRope(f, "full_attention", full));
  G4_ASSIGN_OR_RETURN(c.rope_sliding, hf::ParseRope(f, "sliding_attention", sliding));
  if (!(c.rope_full.theta > 0) || !(c.rope_sliding.theta > 0)) {
    return InvalidArgument(where + "rope_theta and rope_local_base_freq must be > 0");
  }
  G4_ASSIGN_OR_RETURN(c.layer_types,
                      hf::ParseLayerTypes(f, c.num_layers, pattern, /*force_last_full=*/false));
  G4_RETURN_IF_ERROR(BuildLayers(where, &c));
  c.eos_ids = hf::EosIds(config, f, generation_config);
  if (c.eos_ids.empty()) c.eos_ids.push_back(1);  // transformers' default eos_token_id
  return c;
}

StatusOr<ModelConfig> Gemma3ConfigFromGguf(const GgufFile& f) {
  const std::string& path = f.path();
  G4_ASSIGN_OR_RETURN(const std::string arch, f.GetString(gguf::kArchitectureKey));
  if (arch != "gemma3") {
    return Unimplemented(path + ": general.architecture is '" + arch + "', not gemma3");
  }
  const GgufMeta m(f, arch);
  ModelConfig c;
  c.model_type = arch;
  G4_ASSIGN_OR_RETURN(c.num_layers, m.Int("block_count"));
  G4_ASSIGN_OR_RETURN(c.hidden_size, m.Int("embedding_length"));
  if (c.num_layers <= 0 || c.hidden_size <= 0 || c.num_layers > kMaxModelLayers) {
    return m.Err("gemma3.block_count must be in [1, " + std::to_string(kMaxModelLayers) +
                 "] and gemma3.embedding_length > 0");
  }
  G4_ASSIGN_OR_RETURN(c.intermediate_size, m.Int("feed_forward_length"));
  G4_ASSIGN_OR_RETURN(c.num_heads, m.Int("attention.head_count"));
  G4_ASSIGN_OR_RETURN(c.num_kv_heads, m.IntOr("attention.head_count_kv", c.num_heads));
  if (c.num_heads <= 0) return m.Err("gemma3.attention.head_count must be > 0");
  G4_ASSIGN_OR_RETURN(c.head_dim, m.IntOr("attention.key_length", c.hidden_size / c.num_heads));
  G4_ASSIGN_OR_RETURN(const int value_dim, m.IntOr("attention.value_length", c.head_dim));
  if (value_dim != c.head_dim) {
    return Unimplemented(path + ": gemma3.attention.value_length differs from key_length (g4 "
                         "needs K and V head dims equal)");
  }
  G4_RETURN_IF_ERROR(GgufAttentionKeys(m, &c));
  // llama.cpp: 1/sqrt(key_length), except the 27B (62 layers): 1/sqrt(hidden / heads).
  const double query_scalar =
      c.num_layers == 62 ? static_cast<double>(c.hidden_size) / c.num_heads : c.head_dim;
  c.attention_scale = 1.0 / std::sqrt(query_scalar);
  c.v_norm = false;
  // RoPE: sliding layers theta 10,000 (llama.cpp hard-codes it; a freq_base_swa key wins), full
  // layers rope.freq_base with the linear scaling of rope.scaling.* (full layers only).
  G4_ASSIGN_OR_RETURN(c.rope_sliding.theta, m.FloatOr("rope.freq_base_swa", 10000.0));
  G4_ASSIGN_OR_RETURN(c.rope_full.theta, m.FloatOr("rope.freq_base", 1000000.0));
  if (m.Has("rope.scaling.type")) {
    G4_ASSIGN_OR_RETURN(const std::string type, f.GetString(m.Key("rope.scaling.type")));
    if (type != "linear" && type != "none") {
      return Unimplemented(path + ": gemma3.rope.scaling.type '" + type +
                           "' is not supported (Gemma 3 uses linear)");
    }
    if (type == "linear") {
      G4_ASSIGN_OR_RETURN(c.rope_full.factor, m.FloatOr("rope.scaling.factor", 1.0));
    }
  }
  if (!(c.rope_sliding.theta > 0) || !(c.rope_full.theta > 0) || !(c.rope_full.factor > 0)) {
    return m.Err("gemma3.rope.freq_base, rope.freq_base_swa and rope.scaling.factor must be > 0");
  }
  // Layer types: a sliding_window_pattern array when the file has one, else llama.cpp's rule.
  const std::string pattern_key = m.Key("attention.sliding_window_pattern");
  if (f.Has(pattern_key)) {
    G4_ASSIGN_OR_RETURN(const std::vector<bool> sliding, f.GetBoolArray(pattern_key));
    if (static_cast<int>(sliding.size()) != c.num_layers) {
      return m.Err("metadata key '" + pattern_key + "' has " + std::to_string(sliding.size()) +
                   " entries; expected one per layer (" + std::to_string(c.num_layers) + ")");
    }
    for (bool s : sliding) c.layer_types.push_back(s ? LayerType::kSliding : LayerType::kFull);
  } else {
    for (int i = 0; i < c.num_layers; ++i) {
      c.layer_types.push_back(i % kSlidingPattern < kSlidingPattern - 1 ? LayerType::kSliding
                                                                        : LayerType::kFull);
    }
  }
  G4_RETURN_IF_ERROR(GgufVocabulary(m, &c));
  G4_RETURN_IF_ERROR(GgufSpecialIds(m, "<end_of_turn>", &c));
  G4_RETURN_IF_ERROR(BuildLayers(path + ": ", &c));
  return c;
}

StatusOr<ModelConfig> Gemma3ConfigFromCheckpoint(const Checkpoint& checkpoint) {
  if (checkpoint.is_gguf()) return Gemma3ConfigFromGguf(*checkpoint.gguf());
  if (!checkpoint.config()) {
    return NotFound(checkpoint.FilePath("config.json") + ": missing (not a checkpoint directory?)");
  }
  return ParseGemma3Config(*checkpoint.config(), checkpoint.generation_config(),
                           checkpoint.FilePath("config.json"));
}

}  // namespace g4
