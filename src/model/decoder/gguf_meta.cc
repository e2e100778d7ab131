#include "model/decoder/gguf_meta.h"

namespace g4 {

StatusOr<int> GgufMeta::Int(const char* suffix) const {
  G4_ASSIGN_OR_RETURN(const int64_t v, f_.GetInt(Key(suffix)));
  return Checked(Key(suffix), v);
}

StatusOr<int> GgufMeta::IntOr(const char* suffix, int fallback) const {
  if (!Has(suffix)) return fallback;
  return Int(suffix);
}

StatusOr<double> GgufMeta::FloatOr(const char* suffix, double fallback) const {
  if (!Has(suffix)) return fallback;
  return f_.GetFloat(Key(suffix));
}

StatusOr<std::vector<int>> GgufMeta::PerLayer(const char* suffix, int num_layers) const {
  const std::string key = Key(suffix);
  const GgufValue* v = f_.FindValue(key);
  if (!v) return NotFound(f_.path() + ": metadata key '" + key + "' is missing");
  std::vector<int64_t> raw;
  if (v->type == gguf::ValueType::kArray) {
    G4_ASSIGN_OR_RETURN(raw, f_.GetIntArray(key));
    if (static_cast<int64_t>(raw.size()) != num_layers) {
      return Err("metadata key '" + key + "' has " + std::to_string(raw.size()) +
                 " entries; expected one per layer (" + std::to_string(num_layers) + ")");
    }
  } else {
    G4_ASSIGN_OR_RETURN(const int64_t x, f_.GetInt(key));
    raw.assign(static_cast<size_t>(num_layers), x);
  }
  std::vector<int> out;
  for (int64_t x : raw) {
    G4_ASSIGN_OR_RETURN(const int y, Checked(key, x));
    out.push_back(y);
  }
  return out;
}

StatusOr<int> GgufMeta::Checked(const std::string& key, int64_t v) const {
  if (v < 0 || v > (int64_t{1} << 30)) {
    return Err("metadata key '" + key + "' = " + std::to_string(v) + " is out of range");
  }
  return static_cast<int>(v);
}

StatusOr<std::vector<int64_t>> GgufShapeOf(const GgufFile& f, const char* name) {
  const GgufTensorInfo* t = f.Find(name);
  if (!t) return NotFound(f.path() + ": missing tensor '" + std::string(name) + "'");
  return t->shape;
}

Status GgufAttentionKeys(const GgufMeta& m, ModelConfig* c) {
  G4_ASSIGN_OR_RETURN(c->sliding_window, m.Int("attention.sliding_window"));
  G4_ASSIGN_OR_RETURN(c->rms_norm_eps, m.FloatOr("attention.layer_norm_rms_epsilon", 1e-6));
  G4_ASSIGN_OR_RETURN(c->final_logit_softcap, m.FloatOr("final_logit_softcapping", 0.0));
  G4_ASSIGN_OR_RETURN(c->max_position_embeddings, m.IntOr("context_length", 131072));
  if (c->sliding_window <= 0 || c->max_position_embeddings <= 0) {
    return m.Err(m.Key("attention.sliding_window") + " and " + m.Key("context_length") +
                 " must be > 0");
  }
  return Status::Ok();
}

Status GgufVocabulary(const GgufMeta& m, ModelConfig* c) {
  const GgufFile& f = m.file();
  G4_ASSIGN_OR_RETURN(const std::vector<int64_t> embd, GgufShapeOf(f, "token_embd.weight"));
  if (embd.size() != 2 || embd[1] != c->hidden_size || embd[0] <= 0 || embd[0] > (1 << 30)) {
    return InvalidArgument(f.path() + ": tensor 'token_embd.weight' has shape " +
                           ShapeToString(embd) + "; expected [n_vocab, " +
                           std::to_string(c->hidden_size) + "] (embedding_length)");
  }
  c->vocab_size = static_cast<int>(embd[0]);
  if (const GgufValue* tokens = f.FindValue("tokenizer.ggml.tokens")) {
    if (tokens->type != gguf::ValueType::kArray || tokens->elem_type != gguf::ValueType::kString) {
      return m.Err("metadata key 'tokenizer.ggml.tokens' must be an array of string");
    }
    if (tokens->count != static_cast<uint64_t>(c->vocab_size)) {
      return m.Err("tokenizer.ggml.tokens has " + std::to_string(tokens->count) +
                   " tokens but tensor 'token_embd.weight' has " + std::to_string(c->vocab_size) +
                   " rows");
    }
  }
  return Status::Ok();
}

Status GgufSpecialIds(const GgufMeta& m, std::string_view turn_end, ModelConfig* c) {
  const GgufFile& f = m.file();
  auto id_or = [&](const char* key, int fallback) -> StatusOr<int> {
    if (!f.Has(key)) return fallback;
    G4_ASSIGN_OR_RETURN(const int64_t v, f.GetInt(key));
    if (v < 0 || v >= c->vocab_size) {
      return m.Err(std::string("metadata key '") + key + "' = " + std::to_string(v) +
                   " is outside the vocabulary of " + std::to_string(c->vocab_size));
    }
    return static_cast<int>(v);
  };
  G4_ASSIGN_OR_RETURN(c->bos_id, id_or("tokenizer.ggml.bos_token_id", 2));
  G4_ASSIGN_OR_RETURN(c->pad_id, id_or("tokenizer.ggml.padding_token_id", 0));
  G4_ASSIGN_OR_RETURN(const int eos, id_or("tokenizer.ggml.eos_token_id", 1));
  c->eos_ids = {eos};
  const GgufValue* tokens = f.FindValue("tokenizer.ggml.tokens");
  if (tokens && tokens->type == gguf::ValueType::kArray) {
    for (size_t i = 0; i < tokens->strs.size(); ++i) {
      if (tokens->strs[i] == turn_end && static_cast<int>(i) != eos) {
        c->eos_ids.push_back(static_cast<int>(i));
      }
    }
  }
  return Status::Ok();
}

}  // namespace g4
