// Checked readers of the tokenizer.ggml.* keys and Gemma's fixed pipeline (gguf_vocab_common.h).
#include "tokenizer/gguf_vocab_common.h"

namespace g4::gguf_vocab {

using gguf::ValueType;

std::string KeyError(const GgufFile& f, const char* key, const std::string& what) {
  return f.path() + ": " + key + " " + what;
}

StatusOr<const GgufValue*> ArrayOf(const GgufFile& f, const char* key, ValueType elem) {
  const GgufValue* v = f.FindValue(key);
  if (v == nullptr) return NotFound(KeyError(f, key, "is missing"));
  if (v->type != ValueType::kArray || v->elem_type != elem) {
    std::string found = gguf::ValueTypeName(v->type);
    if (v->type == ValueType::kArray) {
      found += std::string(" of ") + gguf::ValueTypeName(v->elem_type);
    }
    return InvalidArgument(KeyError(f, key, std::string("must be an array of ") +
                                                gguf::ValueTypeName(elem) + ", found " + found));
  }
  return v;
}

StatusOr<const GgufValue*> ReadTokens(const GgufFile& f) {
  G4_ASSIGN_OR_RETURN(const GgufValue* tokens, ArrayOf(f, kTokensKey, ValueType::kString));
  const int64_t n = static_cast<int64_t>(tokens->strs.size());
  if (n == 0 || n > INT32_MAX) {
    return InvalidArgument(KeyError(f, kTokensKey, "holds " + std::to_string(n) + " tokens"));
  }
  return tokens;
}

StatusOr<const GgufValue*> ReadTokenTypes(const GgufFile& f, int64_t n) {
  const GgufValue* types = f.FindValue(kTypesKey);
  if (types == nullptr) return NotFound(KeyError(f, kTypesKey, "is missing"));
  if (types->type != ValueType::kArray ||
      (types->elem_type != ValueType::kI32 && types->elem_type != ValueType::kU32)) {
    return InvalidArgument(KeyError(f, kTypesKey, "must be an array of i32"));
  }
  if (static_cast<int64_t>(types->ints.size()) != n) {
    return InvalidArgument(KeyError(f, kTypesKey, "has " + std::to_string(types->ints.size()) +
                                                      " entries for " + std::to_string(n) +
                                                      " tokens"));
  }
  for (int64_t id = 0; id < n; ++id) {
    const int64_t type = types->ints[id];
    if (type < kNormal || type > kByte) {
      return InvalidArgument(KeyError(f, kTypesKey, "has type " + std::to_string(type) +
                                                        " at id " + std::to_string(id) +
                                                        " (known: 1..6)"));
    }
  }
  return types;
}

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

StatusOr<bool> OptionalBool(const GgufFile& f, const char* key, bool absent) {
  if (!f.Has(key)) return absent;
  return f.GetBool(key);
}

bool IsBytePiece(std::string_view p) {
  auto hex = [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F') || (c >= 'a' && c <= 'f');
  };
  return p.size() == 6 && p.substr(0, 3) == "<0x" && p[5] == '>' && hex(p[3]) && hex(p[4]);
}

void SetGemmaPipeline(TokenizerJson* json) {
  constexpr std::string_view kSpace = " ";
  constexpr std::string_view kSpaceSymbol = "\xE2\x96\x81";  // U+2581 "▁"
  json->byte_fallback = true;
  json->fuse_unk = true;
  json->normalizer = {{std::string(kSpace), std::string(kSpaceSymbol)}};
  json->split_after = std::string(kSpace);
  json->decoder_replacements = {{std::string(kSpaceSymbol), std::string(kSpace)}};
  json->decoder_byte_fallback = true;
}

}  // namespace g4::gguf_vocab
