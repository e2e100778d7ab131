// GGUF tokenizer metadata: read into a TokenizerJson (views into the mapped file) and built with
// the same code as tokenizer.json; and written from a parsed tokenizer.json.
#include "tokenizer/gguf_vocab.h"

#include <algorithm>
#include <unordered_map>

#include "tokenizer/gemma4_tokens.h"
#include "tokenizer/gguf_vocab_common.h"
#include "tokenizer/spm_vocab.h"

namespace g4 {
namespace {

using gguf::ValueType;
using gguf_vocab::ArrayOf;
using gguf_vocab::IsBytePiece;
using gguf_vocab::KeyError;
using gguf_vocab::OptionalBool;
using gguf_vocab::OptionalId;
using gguf_vocab::kAddBosKey;
using gguf_vocab::kAddSpaceKey;
using gguf_vocab::kBosKey;
using gguf_vocab::kEosKey;
using gguf_vocab::kMaskKey;
using gguf_vocab::kMergesKey;
using gguf_vocab::kModelKey;
using gguf_vocab::kPadKey;
using gguf_vocab::kScoresKey;
using gguf_vocab::kTemplateKey;
using gguf_vocab::kTokensKey;
using gguf_vocab::kTypesKey;
using gguf_vocab::kUnkKey;
// Token types.
using gguf_vocab::kByte;
using gguf_vocab::kControl;
using gguf_vocab::kNormal;
using gguf_vocab::kUserDefined;

constexpr std::string_view kSpace = " ";
constexpr std::string_view kSpaceSymbol = "\xE2\x96\x81";  // U+2581 "▁"

// Gemma 4's control-token names that a GGUF may type user-defined.
bool IsGemma4ControlName(std::string_view s) {
  for (const gemma4::SlotRename& r : gemma4::kSlotRenames) {
    if (s == r.gemma4) return true;
  }
  return s == gemma4::kBos || s == gemma4::kEos || s == gemma4::kPad || s == gemma4::kUnk;
}

// tokenizer.ggml.model = "gemma4": the token list plus "left right" merges in rank order.
StatusOr<std::unique_ptr<Tokenizer>> Gemma4TokenizerFromGguf(const GgufFile& f) {
  G4_ASSIGN_OR_RETURN(const GgufValue* tokens, gguf_vocab::ReadTokens(f));
  G4_ASSIGN_OR_RETURN(const GgufValue* merges, ArrayOf(f, kMergesKey, ValueType::kString));
  const int64_t n = static_cast<int64_t>(tokens->strs.size());
  G4_ASSIGN_OR_RETURN(const GgufValue* types, gguf_vocab::ReadTokenTypes(f, n));
  G4_ASSIGN_OR_RETURN(bool add_space, OptionalBool(f, kAddSpaceKey, false));
  if (add_space) {
    return Unimplemented(KeyError(f, kAddSpaceKey, "is true; gemma4 tokenizers add no prefix"));
  }
  G4_ASSIGN_OR_RETURN(int32_t bos, OptionalId(f, kBosKey, n));
  G4_ASSIGN_OR_RETURN(int32_t eos, OptionalId(f, kEosKey, n));
  G4_ASSIGN_OR_RETURN(int32_t pad, OptionalId(f, kPadKey, n));
  G4_ASSIGN_OR_RETURN(int32_t unk, OptionalId(f, kUnkKey, n));
  G4_ASSIGN_OR_RETURN(bool add_bos, OptionalBool(f, kAddBosKey, true));

  TokenizerJson json;
  json.vocab.reserve(static_cast<size_t>(n));
  for (int64_t id = 0; id < n; ++id) {
    const std::string_view piece = tokens->strs[id];
    json.vocab.emplace_back(piece, static_cast<int32_t>(id));
    const int64_t type = types->ints[id];
    switch (type) {
      case gguf_vocab::kNormal:
      case gguf_vocab::kByte:
        break;
      case gguf_vocab::kUnknown:
      case gguf_vocab::kControl:
      case gguf_vocab::kUserDefined:
      case gguf_vocab::kUnused: {
        AddedTokenSpec a;
        a.id = static_cast<int32_t>(id);
        a.content = piece;
        a.special = type == gguf_vocab::kControl || type == gguf_vocab::kUnknown ||
                    IsGemma4ControlName(piece);
        if (piece.empty()) {
          return InvalidArgument(KeyError(f, kTokensKey, "has an empty control/user-defined "
                                                         "token at id " + std::to_string(id)));
        }
        json.added_tokens.push_back(a);
        break;
      }
      default:
        return InvalidArgument(KeyError(f, kTypesKey, "has type " + std::to_string(type) +
                                                          " at id " + std::to_string(id) +
                                                          " (known: 1..6)"));
    }
  }
  json.merges.reserve(merges->strs.size());
  for (size_t r = 0; r < merges->strs.size(); ++r) {
    const std::string_view m = merges->strs[r];
    const size_t space = m.find(' ');
    if (space == std::string_view::npos || space == 0 || space + 1 == m.size() ||
        m.find(' ', space + 1) != std::string_view::npos) {
      return InvalidArgument(KeyError(f, kMergesKey, "entry " + std::to_string(r) + " '" +
                                                         std::string(m.substr(0, 80)) +
                                                         "' is not \"left right\""));
    }
    json.merges.emplace_back(m.substr(0, space), m.substr(space + 1));
  }
  json.merges_as_strings = true;
  if (unk >= 0) json.unk_token = std::string(tokens->strs[unk]);
  gguf_vocab::SetGemmaPipeline(&json);

  G4_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> t, Tokenizer::FromJson(json, f.path()));
  // The vocabulary's default names and stop set, overridden by the ids the file states.
  SpecialTokenIds ids = t->special_ids();
  if (bos >= 0) ids.bos = bos;
  if (eos >= 0) ids.eos = eos;
  if (pad >= 0) ids.pad = pad;
  if (unk >= 0) ids.unk = unk;
  if (ids.eos >= 0) ids.stop_ids.push_back(ids.eos);
  std::sort(ids.stop_ids.begin(), ids.stop_ids.end());
  ids.stop_ids.erase(std::unique(ids.stop_ids.begin(), ids.stop_ids.end()), ids.stop_ids.end());
  ids.add_bos_token = add_bos;
  t->set_special_ids(std::move(ids));
  return t;
}

}  // namespace

StatusOr<std::unique_ptr<Tokenizer>> TokenizerFromGguf(const GgufFile& f) {
  if (!f.Has(kModelKey)) return NotFound(KeyError(f, kModelKey, "is missing"));
  G4_ASSIGN_OR_RETURN(std::string model, f.GetString(kModelKey));
  if (model == "gemma4") return Gemma4TokenizerFromGguf(f);
  if (model == "llama") return SpmTokenizerFromGguf(f);
  return Unimplemented(KeyError(f, kModelKey, "is '" + model +
                                                  "'; g4 reads the 'gemma4' (BPE with merges) and "
                                                  "'llama' (SentencePiece, Gemma 1-3) tokenizers"));
}

Status AddGgufTokenizerMetadata(const TokenizerJson& json, const GgufTokenizerOptions& options,
                                GgufMetadata* md) {
  if (!json.byte_fallback || json.normalizer.size() != 1 || json.normalizer[0].from != kSpace ||
      json.normalizer[0].to != kSpaceSymbol) {
    return InvalidArgument(
        "tokenizer.json is not Gemma's byte-fallback BPE with the \" \" -> \"\\u2581\" "
        "normalizer; a gemma4 GGUF cannot describe it");
  }
  int64_t n = 0;
  for (const auto& [piece, id] : json.vocab) n = std::max<int64_t>(n, int64_t{id} + 1);
  for (const AddedTokenSpec& a : json.added_tokens) n = std::max<int64_t>(n, int64_t{a.id} + 1);
  std::vector<std::string_view> tokens(static_cast<size_t>(n));
  std::vector<bool> has(static_cast<size_t>(n), false);
  std::vector<int32_t> types(static_cast<size_t>(n), kNormal);
  for (const auto& [piece, id] : json.vocab) {
    tokens[id] = piece;
    has[id] = true;
    if (IsBytePiece(piece)) types[id] = kByte;
  }
  for (const AddedTokenSpec& a : json.added_tokens) {
    if (a.lstrip || a.rstrip || a.normalized || a.single_word) {
      return InvalidArgument("added token '" + std::string(a.content) +
                             "' has lstrip/rstrip/normalized/single_word, which GGUF cannot hold");
    }
    tokens[a.id] = a.content;
    has[a.id] = true;
    types[a.id] = a.special ? kControl : kUserDefined;
  }
  for (int64_t id = 0; id < n; ++id) {
    if (!has[id]) {
      return InvalidArgument("token id " + std::to_string(id) +
                             " has no piece; GGUF token lists are dense");
    }
  }
  std::vector<float> scores(static_cast<size_t>(n), 0.0f);
  for (int64_t id = 0; id < n; ++id) {
    if (types[id] == kControl) scores[id] = -1000.0f;
  }
  std::vector<std::string> merges;
  merges.reserve(json.merges.size());
  for (const auto& [a, b] : json.merges) {
    if (a.find(' ') != std::string_view::npos || b.find(' ') != std::string_view::npos) {
      return InvalidArgument("merge '" + std::string(a) + "' + '" + std::string(b) +
                             "' contains a space; \"left right\" would be ambiguous");
    }
    std::string m;
    m.reserve(a.size() + b.size() + 1);
    m.append(a).append(" ").append(b);
    merges.push_back(std::move(m));
  }
  auto find = [&](std::string_view name) -> int64_t {
    for (const AddedTokenSpec& a : json.added_tokens) {
      if (a.content == name) return a.id;
    }
    for (const auto& [piece, id] : json.vocab) {
      if (piece == name) return id;
    }
    return -1;
  };

  md->SetString(kModelKey, "gemma4");
  md->SetStringArray(kTokensKey, tokens);
  md->SetF32Array(kScoresKey, scores);
  md->SetI32Array(kTypesKey, types);
  md->SetStringArray(kMergesKey, merges);
  const std::pair<const char*, std::string_view> ids[] = {
      {kBosKey, gemma4::kBos}, {kEosKey, gemma4::kEos}, {kUnkKey, gemma4::kUnk},
      {kPadKey, gemma4::kPad}, {kMaskKey, "<mask>"}};
  for (const auto& [key, name] : ids) {
    const int64_t id = find(name);
    if (id >= 0) md->SetU32(key, static_cast<uint32_t>(id));
  }
  md->SetBool(kAddBosKey, options.add_bos_token);
  md->SetBool(kAddSpaceKey, false);
  if (!options.chat_template.empty()) md->SetString(kTemplateKey, options.chat_template);
  return Status::Ok();
}

}  // namespace g4
