// TokenizerJson: what g4 reads out of a Hugging Face tokenizer.json (the "tokenizers" library's
// serialisation, version 1.0) — the BPE vocabulary and merges, the added tokens, and the
// normalizer / pre-tokenizer / decoder settings — without building a JSON DOM of the 33 MB file.
// Supported is what Gemma uses (formats.md §3.2): model type BPE with byte fallback, literal
// Replace normalizers, a literal Split pre-tokenizer, and Replace / ByteFallback / Fuse decoders.
// Anything else is an Unimplemented error that names the unsupported setting; a malformed or
// truncated file is an error that names the JSON path and byte offset.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"
#include "loader/mapped_file.h"

namespace g4 {

struct AddedTokenSpec {
  int32_t id = -1;
  std::string_view content;
  bool special = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;
  bool single_word = false;
};

// A literal string replacement (normalizer or decoder step).
struct Replacement {
  std::string from;
  std::string to;
};

struct TokenizerJson {
  TokenizerJson() = default;
  // The views below point into this object's own storage: never copy it.
  TokenizerJson(const TokenizerJson&) = delete;
  TokenizerJson& operator=(const TokenizerJson&) = delete;

  // Owns the text the string_views below point into (the mapped file, or a copy).
  std::unique_ptr<MappedFile> file;
  std::string owned_text;
  std::deque<std::string> unescaped;  // strings that had JSON escapes (stable addresses)

  // model
  std::vector<std::pair<std::string_view, int32_t>> vocab;  // file order
  std::vector<std::pair<std::string_view, std::string_view>> merges;  // rank = index
  bool merges_as_strings = false;  // "a b" form rather than ["a", "b"]
  std::string unk_token;           // empty: none
  bool byte_fallback = false;
  bool fuse_unk = false;
  bool ignore_merges = false;

  std::vector<AddedTokenSpec> added_tokens;

  // Normalizer: literal replacements applied in order (Gemma: " " -> "▁").
  std::vector<Replacement> normalizer;
  // Pre-tokenizer: split after every occurrence of this literal (Split, MergedWithPrevious);
  // empty: no split. Gemma's splits on " ", which the normalizer has already removed.
  std::string split_after;
  // Decoder: replacements on every piece, then <0xNN> pieces as raw bytes if byte_fallback.
  std::vector<Replacement> decoder_replacements;
  bool decoder_byte_fallback = false;

  // The exact JSON text of the top-level sections, for writing the file back out.
  std::string_view raw_version, raw_truncation, raw_padding, raw_normalizer, raw_pre_tokenizer,
      raw_post_processor, raw_decoder;
};

// Parses `text` (kept in the result's owned_text). `source` (usually the path) starts every error
// message.
StatusOr<std::unique_ptr<TokenizerJson>> ParseTokenizerJson(std::string text,
                                                            const std::string& source);

// Maps and parses a tokenizer.json file.
StatusOr<std::unique_ptr<TokenizerJson>> ReadTokenizerJson(const std::string& path);

}  // namespace g4
