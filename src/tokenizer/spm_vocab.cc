// SentencePiece ("llama") GGUF tokenizer metadata -> TokenizerJson -> Tokenizer (spm_vocab.h).
#include "tokenizer/spm_vocab.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "tokenizer/gguf_vocab_common.h"
#include "tokenizer/spm_merges.h"

namespace g4 {
namespace {

using gguf::ValueType;
using gguf_vocab::KeyError;

constexpr std::string_view kSpaceSymbol = "\xE2\x96\x81";  // U+2581 "▁"

// A token that llama.cpp's converter wrote with spaces where SentencePiece has "▁" (it does so for
// every user-defined token; only Gemma's whitespace runs contain one).
bool IsSpaceRun(std::string_view piece) {
  return !piece.empty() && piece.find_first_not_of(' ') == std::string_view::npos;
}

// tokenizer.ggml.scores: one finite f32 (or f64) per token.
StatusOr<std::vector<float>> ReadScores(const GgufFile& f, int64_t n) {
  const char* key = gguf_vocab::kScoresKey;
  const GgufValue* v = f.FindValue(key);
  if (v == nullptr) {
    return NotFound(KeyError(f, key, "is missing (a SentencePiece vocabulary needs its scores)"));
  }
  if (v->type != ValueType::kArray ||
      (v->elem_type != ValueType::kF32 && v->elem_type != ValueType::kF64)) {
    std::string found = gguf::ValueTypeName(v->type);
    if (v->type == ValueType::kArray) {
      found += std::string(" of ") + gguf::ValueTypeName(v->elem_type);
    }
    return InvalidArgument(KeyError(f, key, "must be an array of f32, found " + found));
  }
  if (static_cast<int64_t>(v->floats.size()) != n) {
    return InvalidArgument(KeyError(f, key, "has " + std::to_string(v->floats.size()) +
                                                " entries for " + std::to_string(n) + " tokens"));
  }
  std::vector<float> scores(static_cast<size_t>(n));
  for (int64_t id = 0; id < n; ++id) {
    const double s = v->floats[id];
    // Scores order the merges; a NaN would leave them without an order.
    if (!std::isfinite(s) || std::fabs(s) > 3.4e38) {
      return InvalidArgument(KeyError(f, key, "has " + std::to_string(s) + " at id " +
                                                  std::to_string(id) + " (must be finite)"));
    }
    scores[id] = static_cast<float>(s);
  }
  return scores;
}

}  // namespace

StatusOr<std::unique_ptr<TokenizerJson>> SpmTokenizerJsonFromGguf(const GgufFile& f) {
  G4_ASSIGN_OR_RETURN(const GgufValue* tokens, gguf_vocab::ReadTokens(f));
  const int64_t n = static_cast<int64_t>(tokens->strs.size());
  G4_ASSIGN_OR_RETURN(const GgufValue* types, gguf_vocab::ReadTokenTypes(f, n));
  G4_ASSIGN_OR_RETURN(std::vector<float> scores, ReadScores(f, n));
  G4_ASSIGN_OR_RETURN(bool add_space,
                      gguf_vocab::OptionalBool(f, gguf_vocab::kAddSpaceKey, /*absent=*/true));
  if (add_space) {
    return Unimplemented(KeyError(
        f, gguf_vocab::kAddSpaceKey,
        std::string(f.Has(gguf_vocab::kAddSpaceKey) ? "is true" : "is absent (llama.cpp: true)") +
            "; g4 reads SentencePiece vocabularies without a space prefix (Gemma's)"));
  }
  G4_ASSIGN_OR_RETURN(int32_t unk, gguf_vocab::OptionalId(f, gguf_vocab::kUnkKey, n));

  auto json = std::make_unique<TokenizerJson>();
  std::vector<std::string_view> pieces(static_cast<size_t>(n));
  std::vector<uint8_t> mergeable(static_cast<size_t>(n), 0);
  json->vocab.reserve(static_cast<size_t>(n));
  for (int64_t id = 0; id < n; ++id) {
    std::string_view piece = tokens->strs[id];
    const int64_t type = types->ints[id];
    auto at = [id] { return " at id " + std::to_string(id); };
    switch (type) {
      case gguf_vocab::kNormal:
        mergeable[id] = 1;
        break;
      case gguf_vocab::kByte:
        if (!gguf_vocab::IsBytePiece(piece)) {
          return InvalidArgument(
              KeyError(f, gguf_vocab::kTypesKey,
                       "types '" + std::string(piece.substr(0, 40)) + "'" + at() +
                           " as a byte token, which must be spelled <0xNN>"));
        }
        break;
      case gguf_vocab::kUserDefined:
        if (IsSpaceRun(piece)) {
          std::string spelled;
          for (size_t i = 0; i < piece.size(); ++i) spelled += kSpaceSymbol;
          json->unescaped.push_back(std::move(spelled));
          piece = json->unescaped.back();
        }
        // SentencePiece stores 0 for user-defined pieces (the converter's -1000 is a placeholder):
        // their merges outrank every normal merge, so a run of "▁" always becomes one piece.
        scores[id] = 0.0f;
        mergeable[id] = 1;
        [[fallthrough]];
      case gguf_vocab::kControl:
      case gguf_vocab::kUnknown: {
        if (piece.empty()) {
          return InvalidArgument(KeyError(f, gguf_vocab::kTokensKey,
                                          "has an empty control/user-defined token" + at()));
        }
        AddedTokenSpec a;
        a.id = static_cast<int32_t>(id);
        a.content = piece;
        a.special = type != gguf_vocab::kUserDefined;
        json->added_tokens.push_back(a);
        break;
      }
      default:  // kUnused: a piece nothing produces
        break;
    }
    pieces[id] = piece;
    json->vocab.emplace_back(piece, static_cast<int32_t>(id));
  }
  json->merges = DeriveSpmMerges(pieces, scores, mergeable);
  if (unk >= 0) json->unk_token = std::string(pieces[unk]);
  gguf_vocab::SetGemmaPipeline(json.get());
  return json;
}

StatusOr<std::unique_ptr<Tokenizer>> SpmTokenizerFromGguf(const GgufFile& f) {
  G4_ASSIGN_OR_RETURN(std::unique_ptr<TokenizerJson> json, SpmTokenizerJsonFromGguf(f));
  const int64_t n = static_cast<int64_t>(json->vocab.size());
  G4_ASSIGN_OR_RETURN(int32_t bos, gguf_vocab::OptionalId(f, gguf_vocab::kBosKey, n));
  G4_ASSIGN_OR_RETURN(int32_t eos, gguf_vocab::OptionalId(f, gguf_vocab::kEosKey, n));
  G4_ASSIGN_OR_RETURN(int32_t pad, gguf_vocab::OptionalId(f, gguf_vocab::kPadKey, n));
  G4_ASSIGN_OR_RETURN(int32_t unk, gguf_vocab::OptionalId(f, gguf_vocab::kUnkKey, n));
  G4_ASSIGN_OR_RETURN(bool add_bos,
                      gguf_vocab::OptionalBool(f, gguf_vocab::kAddBosKey, /*absent=*/true));
  G4_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> t, Tokenizer::FromJson(*json, f.path()));

  // The names' defaults, overridden by the ids the file states.
  const SpecialTokenIds named = t->special_ids();
  SpecialTokenIds ids;
  ids.bos = bos >= 0 ? bos : named.bos;
  ids.eos = eos >= 0 ? eos : named.eos;
  ids.pad = pad >= 0 ? pad : named.pad;
  ids.unk = unk >= 0 ? unk : named.unk;
  ids.add_bos_token = add_bos;
  for (const int32_t id : {ids.eos, named.eos, t->TokenId("<end_of_turn>")}) {
    if (id >= 0) ids.stop_ids.push_back(id);
  }
  std::sort(ids.stop_ids.begin(), ids.stop_ids.end());
  ids.stop_ids.erase(std::unique(ids.stop_ids.begin(), ids.stop_ids.end()), ids.stop_ids.end());
  t->set_special_ids(std::move(ids));
  return t;
}

}  // namespace g4
