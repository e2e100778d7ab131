// GGUF tokenizer metadata: read into a TokenizerJson (views into the mapped file) and built with
// the same code as tokenizer.json; and written from a parsed tokenizer.json.
#include "tokenizer/gguf_vocab.h"

#include <algorithm>
#include <unordered_map>

#include "tokenizer/gemma4_tokens.h"

namespace g4 {
namespace {

using gguf::ValueType;

constexpr const char* kModelKey = "tokenizer.ggml.model";
constexpr const char* kTokensKey = "tokenizer.ggml.tokens";
constexpr const char* kScoresKey = "tokenizer.ggml.scores";
constexpr const char* kTypesKey = "tokenizer.ggml.token_type";
constexpr const char* kMergesKey = "tokenizer.ggml.merges";
constexpr const char* kBosKey = "tokenizer.ggml.bos_token_id";
constexpr const char* kEosKey = "tokenizer.ggml.eos_token_id";
constexpr const char* kPadKey = "tokenizer.ggml.padding_token_id";
constexpr const char* kUnkKey = "tokenizer.ggml.unknown_token_id";
constexpr const char* kMaskKey = "tokenizer.ggml.mask_token_id";
constexpr const char* kAddBosKey = "tokenizer.ggml.add_bos_token";
constexpr const char* kAddSpaceKey = "tokenizer.ggml.add_space_prefix";
constexpr const char* kTemplateKey = "tokenizer.chat_template";

constexpr std::string_view kSpace = " ";
constexpr std::string_view kSpaceSymbol = "\xE2\x96\x81";  // U+2581 "▁"

enum TokenType : int32_t {
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

bool IsBytePiece(std::string_view p) {
  auto hex = [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F') || (c >= 'a' && c <= 'f');
  };
  return p.size() == 6 && p.substr(0, 3) == "<0x" && p[5] == '>' && hex(p[3]) && hex(p[4]);
}

// Gemma 4's control-token names that a GGUF may type user-defined.
bool IsGemma4ControlName(std::string_view s) {
  for (const gemma4::SlotRename& r : gemma4::kSlotRenames) {
    if (s == r.gemma4) return true;
  }
  return s == gemma4::kBos || s == gemma4::kEos || s == gemma4::kPad || s == gemma4::kUnk;
}

std::string KeyError(const GgufFile& f, const char* key, const std::string& what) {
  return f.path() + ": " + key + " " + what;
}

// An array value of element type `elem` (NotFound if absent, InvalidArgument if not so typed).
StatusOr<const GgufValue*> ArrayOf(const GgufFile& f, const char* key, ValueType elem) {
  const GgufValue* v = f.FindValue(key);
  if (v == nullptr) return NotFound(KeyError(f, key, "is missing"));
  if (v->type != ValueType::kArray || v->elem_type != elem) {
    std::string found = gguf::ValueTypeName(v->type);
    if (v->type == ValueType::kArray) found += std::string(" of ") + gguf::ValueTypeName(v->elem_type);
    return InvalidArgument(KeyError(f, key, std::string("must be an array of ") +
                                                gguf::ValueTypeName(elem) + ", found " + found));
  }
  return v;
}

// An optional token id: -1 when absent; InvalidArgument when mistyped or outside [0, n).
StatusOr<int32_t> OptionalId(const GgufFile& f, const char* key, int64_t n) {
  if (!f.Has(key)) return -1;
  G4_ASSIGN_OR_RETURN(int64_t id, f.GetInt(key));
  if (id < 0 || id >= n) {
    return InvalidArgument(KeyError(f, key, "= " + std::to_string(id) +
                                                " is outside the vocabulary of " +
                                                std::to_string(n) + " tokens"));
  }
  return static_cast<int32_t>(id);
}

}  // namespace

StatusOr<std::unique_ptr<Tokenizer>> TokenizerFromGguf(const GgufFile& f) {
  if (!f.Has(kModelKey)) return NotFound(KeyError(f, kModelKey, "is missing"));
  G4_ASSIGN_OR_RETURN(std::string model, f.GetString(kModelKey));
  if (model != "gemma4") {
    return Unimplemented(KeyError(f, kModelKey, "is '" + model +
                                                    "'; g4 reads only the 'gemma4' tokenizer"));
  }
  G4_ASSIGN_OR_RETURN(const GgufValue* tokens, ArrayOf(f, kTokensKey, ValueType::kString));
  G4_ASSIGN_OR_RETURN(const GgufValue* merges, ArrayOf(f, kMergesKey, ValueType::kString));
  const GgufValue* types = f.FindValue(kTypesKey);
  if (types == nullptr) return NotFound(KeyError(f, kTypesKey, "is missing"));
  if (types->type != ValueType::kArray ||
      (types->elem_type != ValueType::kI32 && types->elem_type != ValueType::kU32)) {
    return InvalidArgument(KeyError(f, kTypesKey, "must be an array of i32"));
  }
  const int64_t n = static_cast<int64_t>(tokens->strs.size());
  if (n == 0 || n > INT32_MAX) {
    return InvalidArgument(KeyError(f, kTokensKey, "holds " + std::to_string(n) + " tokens"));
  }
  if (static_cast<int64_t>(types->ints.size()) != n) {
    return InvalidArgument(KeyError(f, kTypesKey, "has " + std::to_string(types->ints.size()) +
                                                      " entries for " + std::to_string(n) +
                                                      " tokens"));
  }
  if (f.Has(kAddSpaceKey)) {
    G4_ASSIGN_OR_RETURN(bool add_space, f.GetBool(kAddSpaceKey));
    if (add_space) {
      return Unimplemented(KeyError(f, kAddSpaceKey, "is true; gemma4 tokenizers add no prefix"));
    }
  }
  G4_ASSIGN_OR_RETURN(int32_t bos, OptionalId(f, kBosKey, n));
  G4_ASSIGN_OR_RETURN(int32_t eos, OptionalId(f, kEosKey, n));
  G4_ASSIGN_OR_RETURN(int32_t pad, OptionalId(f, kPadKey, n));
  G4_ASSIGN_OR_RETURN(int32_t unk, OptionalId(f, kUnkKey, n));
  bool add_bos = true;
  if (f.Has(kAddBosKey)) {
    G4_ASSIGN_OR_RETURN(add_bos, f.GetBool(kAddBosKey));
  }

  TokenizerJson json;
  json.vocab.reserve(static_cast<size_t>(n));
  for (int64_t id = 0; id < n; ++id) {
    const std::string_view piece = tokens->strs[id];
    json.vocab.emplace_back(piece, static_cast<int32_t>(id));
    const int64_t type = types->ints[id];
    switch (type) {
      case kNormal:
      case kByte:
        break;
      case kUnknown:
      case kControl:
      case kUserDefined:
      case kUnused: {
        AddedTokenSpec a;
        a.id = static_cast<int32_t>(id);
        a.content = piece;
        a.special = type == kControl || type == kUnknown || IsGemma4ControlName(piece);
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
  json.byte_fallback = true;
  json.fuse_unk = true;
  json.normalizer = {{std::string(kSpace), std::string(kSpaceSymbol)}};
  json.split_after = std::string(kSpace);
  json.decoder_replacements = {{std::string(kSpaceSymbol), std::string(kSpace)}};
  json.decoder_byte_fallback = true;

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

StatusOr<ChatStyle> ChatStyleFromGguf(const GgufFile& f) {
  if (f.Has(kTemplateKey)) {
    G4_ASSIGN_OR_RETURN(std::string text, f.GetString(kTemplateKey));
    ChatStyle style = ChatStyleFromTemplate(text);
    style.source = f.path() + " " + kTemplateKey;
    return style;
  }
  constexpr const char* kPleKey = "gemma4.embedding_length_per_layer_input";
  ChatStyle style;
  if (f.Has(kPleKey)) {
    G4_ASSIGN_OR_RETURN(int64_t ple, f.GetInt(kPleKey));
    style.empty_thought_in_generation_prompt = ple <= 0;
    style.source = f.path() + (ple > 0 ? " (per-layer embeddings: E2B/E4B form)"
                                       : " (no per-layer embeddings: 26B/31B form)");
  }
  return style;
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
