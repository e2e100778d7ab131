// Gemma tokenizers <-> GGUF metadata (`tokenizer.ggml.*`, ../shared/spec/peers.md §1.2, §1.5,
// formats.md §2.4). Two tokenizer models are read (tokenizer.ggml.model):
//   "gemma4": the same BPE that tokenizer.json describes: the token list (id = index), "left
//             right" merges in rank order, and a type per token (below);
//   "llama":  SentencePiece BPE (Gemma 1-3): tokens with scores and types, no merges; the merges
//             are derived from the scores (spm_vocab.h).
// The pipeline around the BPE is fixed for both (" " -> "▁" normalizer, newline-run split, byte
// fallback to <0xNN>, "▁" -> " " on decode), so it is rebuilt here rather than stored.
//
// Token types (llama.cpp's): 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte.
//   reading "gemma4": control and unknown -> special added tokens; user-defined and unused ->
//            added tokens, special when the text is one of Gemma 4's control-token names
//            (llama.cpp's converter types the tool-call / channel markers user-defined); normal
//            and byte -> plain pieces (byte pieces decode to their byte).
//   reading "llama": see spm_vocab.h (control/unknown special, user-defined non-special).
//   writing: special added -> control, other added -> user-defined, <0xNN> -> byte, rest normal.
// So tokenizer.json -> GGUF -> Tokenizer gives the tokenizer tokenizer.json gives.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "loader/gguf.h"
#include "loader/gguf_writer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_json.h"

namespace g4 {

// The tokenizer of a GGUF file, special ids from tokenizer.ggml.{bos,eos,padding,unknown}_token_id
// (stops: EOS plus <turn|> and <|tool_response> when present, as for tokenizer.json; "llama":
// EOS, <eos> and <end_of_turn>). Errors name the file and key: NotFound for a missing required key
// (model, tokens, token_type, and merges for "gemma4" or scores for "llama"), InvalidArgument for
// a mistyped or inconsistent one, Unimplemented for a model other than "gemma4" and "llama".
StatusOr<std::unique_ptr<Tokenizer>> TokenizerFromGguf(const GgufFile& file);

struct GgufTokenizerOptions {
  bool add_bos_token = true;  // llama.cpp forces it on for gemma4 anyway
  std::string chat_template;  // written when non-empty
};

// Adds tokenizer.ggml.* (and tokenizer.chat_template) for `json`, which must have Gemma's
// pipeline (byte-fallback BPE, " " -> "▁" normalizer) and dense ids. Special ids are looked up
// by name (<bos>, <eos>, <pad>, <unk>, <mask>); absent names are not written.
Status AddGgufTokenizerMetadata(const TokenizerJson& json, const GgufTokenizerOptions& options,
                                GgufMetadata* metadata);

}  // namespace g4
