// What the two GGUF tokenizer models g4 reads have in common (gguf_vocab.cc for "gemma4",
// spm_vocab.cc for "llama"): the tokenizer.ggml.* keys, checked readers whose errors start with
// the file path and name the key (e.g. "m.gguf: tokenizer.ggml.token_type has 5 entries for 6
// tokens"), and Gemma's fixed text pipeline around the BPE.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "loader/gguf.h"
#include "tokenizer/tokenizer_json.h"

namespace g4::gguf_vocab {

inline constexpr const char* kModelKey = "tokenizer.ggml.model";
inline constexpr const char* kTokensKey = "tokenizer.ggml.tokens";
inline constexpr const char* kScoresKey = "tokenizer.ggml.scores";
inline constexpr const char* kTypesKey = "tokenizer.ggml.token_type";
inline constexpr const char* kMergesKey = "tokenizer.ggml.merges";
inline constexpr const char* kBosKey = "tokenizer.ggml.bos_token_id";
inline constexpr const char* kEosKey = "tokenizer.ggml.eos_token_id";
inline constexpr const char* kPadKey = "tokenizer.ggml.padding_token_id";
inline constexpr const char* kUnkKey = "tokenizer.ggml.unknown_token_id";
inline constexpr const char* kMaskKey = "tokenizer.ggml.mask_token_id";
inline constexpr const char* kAddBosKey = "tokenizer.ggml.add_bos_token";
inline constexpr const char* kAddSpaceKey = "tokenizer.ggml.add_space_prefix";
inline constexpr const char* kTemplateKey = "tokenizer.chat_template";
inline constexpr const char* kArchitectureKey = "general.architecture";

// llama.cpp's token types (tokenizer.ggml.token_type).
enum TokenType : int32_t {
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

// "<path>: <key> <what>".
std::string KeyError(const GgufFile& f, const char* key, const std::string& what);

// An array value of element type `elem`: NotFound if absent, InvalidArgument if not so typed.
StatusOr<const GgufValue*> ArrayOf(const GgufFile& f, const char* key, gguf::ValueType elem);

// tokenizer.ggml.tokens: an array of 1 .. INT32_MAX strings.
StatusOr<const GgufValue*> ReadTokens(const GgufFile& f);

// tokenizer.ggml.token_type: an array of i32 (or u32) with one entry per token, each in 1..6.
StatusOr<const GgufValue*> ReadTokenTypes(const GgufFile& f, int64_t num_tokens);

// An optional token id: -1 when absent; InvalidArgument when mistyped or outside [0, n).
StatusOr<int32_t> OptionalId(const GgufFile& f, const char* key, int64_t n);

// An optional bool key, `absent` when the key is not there.
StatusOr<bool> OptionalBool(const GgufFile& f, const char* key, bool absent);

// "<0xNN>" with two hex digits: a byte-fallback piece.
bool IsBytePiece(std::string_view piece);

// Gemma's pipeline, which neither GGUF model stores: " " -> "▁" before the BPE (no space prefix),
// byte fallback to <0xNN>, fused <unk>, "▁" -> " " and <0xNN> -> byte on decode. Sets everything
// in `json` but the vocabulary, merges, added tokens and unk_token.
void SetGemmaPipeline(TokenizerJson* json);

}  // namespace g4::gguf_vocab
