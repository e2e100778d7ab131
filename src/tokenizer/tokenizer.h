// Tokenizer: text <-> token ids for Gemma checkpoints, matching Hugging Face tokenizers (and the
// transformers.js port used as the test oracle) on Gemma's tokenizer.json (formats.md §3–4):
//   encode = added tokens matched whole in the raw text (leftmost-longest)
//            -> the normalizer on the rest (" " -> "▁")
//            -> split into runs of '\n' and runs of anything else (a newline run that is itself a
//               vocabulary piece is one token; gemma4.md §4.1)
//            -> BPE over code points with byte fallback (bpe.h).
//   decode = each piece with "▁" -> " ", <0xNN> pieces as raw bytes, concatenated.
// BOS is never added implicitly (the chat template writes "<bos>"); EncodeOptions::add_bos adds
// it once. Any byte string can be encoded (invalid UTF-8 goes through byte fallback) and
// Decode(Encode(s)) == s for every s without U+2581 (which decodes to a space by design).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe.h"
#include "tokenizer/piece_table.h"
#include "tokenizer/special_tokens.h"
#include "tokenizer/tokenizer_json.h"

namespace g4 {

struct EncodeOptions {
  // Recognise special added tokens ("<bos>", "<|turn>", ...) written in the text, as Hugging
  // Face does by default. False for untrusted user text: "<|turn>" is then ordinary characters.
  // Non-special added tokens ("\n\n", "<b>", ...) are always recognised: they are how the
  // vocabulary spells that text.
  bool parse_special = true;
  // Prepend BOS unless the encoded text already starts with it.
  bool add_bos = false;
};

struct DecodeOptions {
  // Drop special tokens (<bos>, <turn|>, ...) from the text. The tool-call / channel markers of
  // gemma4::kRenderedAsText are always rendered, so output parsers can see them.
  bool skip_special = false;
};

enum class TokenKind : uint8_t {
  kNormal,         // a BPE piece
  kByte,           // <0xNN>: decodes to that raw byte
  kAdded,          // a non-special added token (decodes as its text)
  kSpecial,        // a special added token (skippable)
  kSpecialAsText,  // special, but rendered even when skipping (gemma4::kRenderedAsText)
};

class Tokenizer {
 public:
  // `path` is a checkpoint directory (tokenizer.json + optional tokenizer_config.json and
  // generation_config.json) or a tokenizer.json file (special ids then come from the names).
  static StatusOr<std::unique_ptr<Tokenizer>> Load(const std::string& path);
  // From an already parsed file; `source` names it in error messages.
  static StatusOr<std::unique_ptr<Tokenizer>> FromJson(const TokenizerJson& json,
                                                       const std::string& source);
  // From tokenizer.json text (copied).
  static StatusOr<std::unique_ptr<Tokenizer>> FromJsonText(std::string_view text,
                                                           const std::string& source);

  std::vector<int32_t> Encode(std::string_view text, const EncodeOptions& options = {}) const;
  // Appends to *ids.
  void EncodeTo(std::string_view text, const EncodeOptions& options,
                std::vector<int32_t>* ids) const;

  // InvalidArgument for an id outside the vocabulary.
  StatusOr<std::string> Decode(std::span<const int32_t> ids,
                               const DecodeOptions& options = {}) const;
  // Appends the bytes one token decodes to (nothing for a skipped special token).
  Status AppendDecoded(int32_t id, const DecodeOptions& options, std::string* out) const;

  // Ids are in [0, vocab_size()); some may have no piece (HasId false).
  int32_t vocab_size() const { return pieces_.size(); }
  bool HasId(int32_t id) const { return pieces_.Has(id); }
  std::string_view Piece(int32_t id) const { return pieces_.Piece(id); }
  // The id whose piece (or added-token text) is `piece`, or -1.
  int32_t TokenId(std::string_view piece) const { return pieces_.Find(piece); }
  TokenKind Kind(int32_t id) const { return kinds_[id]; }
  // Whether id decodes to a word: after any leading spaces, one or more letters (ASCII letters
  // or non-ASCII characters) and nothing else: " The", "ing", "été", "日本". Digits, spaces,
  // punctuation, byte and special tokens are not words. The degeneracy check's word runs.
  bool IsWordToken(int32_t id) const;

  const SpecialTokenIds& special_ids() const { return special_; }
  void set_special_ids(SpecialTokenIds ids) { special_ = std::move(ids); }

 private:
  Tokenizer() = default;
  Status Init(const TokenizerJson& json, const std::string& source);
  void EncodeSegment(std::string_view text, std::vector<int32_t>* ids) const;
  void EncodeNormalized(std::string_view text, std::vector<int32_t>* ids) const;
  void EncodeLine(std::string_view text, std::vector<int32_t>* ids) const;
  void EncodeWord(std::string_view word, std::vector<int32_t>* ids) const;
  void FindSpaceJoiners();

  PieceTable pieces_;
  std::vector<TokenKind> kinds_;
  std::string decoded_;                 // decoded bytes of every id, concatenated
  std::vector<uint32_t> decoded_begin_; // id -> offset into decoded_ (size vocab_size + 1)
  AddedTokenMatcher added_;
  std::vector<uint8_t> strip_;          // per id: bit 0 lstrip, bit 1 rstrip (added tokens)
  bool any_strip_ = false;
  BpeModel bpe_;
  std::vector<Replacement> normalizer_;
  std::string split_after_;
  // BPE over a whole line is exact but slow for long lines. It is cut into independent words
  // before each space symbol ("▁") whose preceding character never precedes "▁" inside any
  // vocabulary piece: no merge can ever span such a cut, so the result is the same. The
  // characters that do (Gemma: only '>', from the piece ">▁</") are in space_joiners_.
  std::string space_symbol_;
  std::vector<uint32_t> space_joiners_;  // sorted code points
  uint64_t serial_ = 0;  // identifies this tokenizer to the per-thread word cache
  SpecialTokenIds special_;
};

}  // namespace g4
