// Reading a GGUF file's model metadata (llama.cpp's "<arch>.*" keys, ../shared/spec/peers.md
// §1.2) for the Gemma config readers: typed keys whose errors name the file and the key, the
// vocabulary from token_embd, and the special ids.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "loader/gguf.h"
#include "model/config.h"

namespace g4 {

// Reads the "<arch>." keys of one file.
class GgufMeta {
 public:
  GgufMeta(const GgufFile& f, std::string arch) : f_(f), arch_(std::move(arch)) {}

  const GgufFile& file() const { return f_; }
  // "<arch>.<suffix>"
  std::string Key(const char* suffix) const { return arch_ + "." + suffix; }
  bool Has(const char* suffix) const { return f_.Has(Key(suffix)); }
  Status Err(const std::string& what) const { return InvalidArgument(f_.path() + ": " + what); }

  // A non-negative int that fits a ModelConfig field.
  StatusOr<int> Int(const char* suffix) const;
  StatusOr<int> IntOr(const char* suffix, int fallback) const;
  StatusOr<double> FloatOr(const char* suffix, double fallback) const;
  // A key that is either a scalar (every layer) or an array with one entry per layer.
  StatusOr<std::vector<int>> PerLayer(const char* suffix, int num_layers) const;

 private:
  StatusOr<int> Checked(const std::string& key, int64_t v) const;
  const GgufFile& f_;
  std::string arch_;
};

// The tensor's PyTorch shape, or NotFound naming it.
StatusOr<std::vector<int64_t>> GgufShapeOf(const GgufFile& f, const char* name);

// The keys every Gemma reads alike: attention.sliding_window, attention.layer_norm_rms_epsilon,
// final_logit_softcapping and context_length (window and context must be > 0).
Status GgufAttentionKeys(const GgufMeta& m, ModelConfig* c);

// c->vocab_size from token_embd.weight ([n_vocab, hidden]), which tokenizer.ggml.tokens (when
// present) must match.
Status GgufVocabulary(const GgufMeta& m, ModelConfig* c);

// c->bos_id and c->pad_id from tokenizer.ggml.*; c->eos_ids = the eos id, plus the id of the
// token `turn_end` (the end of a chat turn) when the vocabulary has it.
Status GgufSpecialIds(const GgufMeta& m, std::string_view turn_end, ModelConfig* c);

}  // namespace g4
