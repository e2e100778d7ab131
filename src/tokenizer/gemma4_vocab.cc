// Gemma 3 -> Gemma 4 tokenizer conversion and the JSON writer for it. The writer emits the
// "tokenizers" serialisation (merges as ["a", "b"] pairs) and copies the pipeline sections
// (normalizer, pre_tokenizer, post_processor, decoder) verbatim from the source file.
#include "tokenizer/gemma4_vocab.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <unordered_map>

#include "tokenizer/gemma4_tokens.h"

namespace g4 {
namespace {

void AppendQuoted(std::string_view s, std::string* out) {
  static const char* kHex = "0123456789abcdef";
  out->push_back('"');
  for (const char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': *out += "\\\""; break;
      case '\\': *out += "\\\\"; break;
      case '\n': *out += "\\n"; break;
      case '\r': *out += "\\r"; break;
      case '\t': *out += "\\t"; break;
      case '\b': *out += "\\b"; break;
      case '\f': *out += "\\f"; break;
      default:
        if (c < 0x20) {
          *out += "\\u00";
          out->push_back(kHex[c >> 4]);
          out->push_back(kHex[c & 15]);
        } else {
          out->push_back(ch);
        }
    }
  }
  out->push_back('"');
}

std::string_view OrNull(std::string_view raw) { return raw.empty() ? "null" : raw; }

Status WriteFile(const std::filesystem::path& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(text.data(), static_cast<std::streamsize>(text.size()));
  f.close();
  if (!f) return IoError("cannot write " + path.string());
  return Status::Ok();
}

}  // namespace

StatusOr<Gemma4TokenizerFiles> MakeGemma4TokenizerFiles(const TokenizerJson& src,
                                                        bool large_model_template) {
  // Old name -> new name, checked against the slots' ids.
  std::unordered_map<std::string_view, std::string_view> rename;
  std::unordered_map<int32_t, const gemma4::SlotRename*> by_id;
  for (const gemma4::SlotRename& r : gemma4::kSlotRenames) {
    rename[r.gemma3] = r.gemma4;
    by_id[r.id] = &r;
  }
  auto renamed = [&](std::string_view piece) {
    const auto it = rename.find(piece);
    return it == rename.end() ? piece : it->second;
  };
  size_t slots_seen = 0;
  for (const auto& [piece, id] : src.vocab) {
    const auto it = by_id.find(id);
    if (it == by_id.end()) continue;
    if (piece != it->second->gemma3 && piece != it->second->gemma4) {
      return InvalidArgument("model.vocab: id " + std::to_string(id) + " is '" +
                             std::string(piece) + "', expected '" +
                             std::string(it->second->gemma3) +
                             "' (is this Google's Gemma 3 tokenizer.json?)");
    }
    ++slots_seen;
  }
  if (slots_seen != std::size(gemma4::kSlotRenames)) {
    return InvalidArgument("model.vocab lacks some of Gemma's control slots (found " +
                           std::to_string(slots_seen) + " of " +
                           std::to_string(std::size(gemma4::kSlotRenames)) +
                           "); is this Google's Gemma 3 tokenizer.json?");
  }

  Gemma4TokenizerFiles files;
  std::string& j = files.tokenizer_json;
  j.reserve(40u << 20);
  j += "{\n  \"version\": ";
  j += src.raw_version.empty() ? std::string_view("\"1.0\"") : src.raw_version;
  j += ",\n  \"truncation\": ";
  j += OrNull(src.raw_truncation);
  j += ",\n  \"padding\": ";
  j += OrNull(src.raw_padding);
  j += ",\n  \"added_tokens\": [";
  bool first = true;
  for (const AddedTokenSpec& a : src.added_tokens) {
    if (a.id >= gemma4::kVocabSize) continue;  // <image_soft_token>
    const bool slot = by_id.count(a.id) > 0;
    j += first ? "\n    {\"id\": " : ",\n    {\"id\": ";
    first = false;
    j += std::to_string(a.id);
    j += ", \"content\": ";
    AppendQuoted(renamed(a.content), &j);
    j += ", \"single_word\": false, \"lstrip\": ";
    j += a.lstrip ? "true" : "false";
    j += ", \"rstrip\": ";
    j += a.rstrip ? "true" : "false";
    j += ", \"normalized\": ";
    j += a.normalized ? "true" : "false";
    j += ", \"special\": ";
    j += (a.special || slot) ? "true}" : "false}";
  }
  j += "\n  ],\n  \"normalizer\": ";
  j += OrNull(src.raw_normalizer);
  j += ",\n  \"pre_tokenizer\": ";
  j += OrNull(src.raw_pre_tokenizer);
  j += ",\n  \"post_processor\": ";
  j += OrNull(src.raw_post_processor);
  j += ",\n  \"decoder\": ";
  j += OrNull(src.raw_decoder);
  j += ",\n  \"model\": {\n    \"type\": \"BPE\",\n    \"dropout\": null,\n    \"unk_token\": ";
  if (src.unk_token.empty()) {
    j += "null";
  } else {
    AppendQuoted(src.unk_token, &j);
  }
  j += ",\n    \"continuing_subword_prefix\": null,\n    \"end_of_word_suffix\": null,";
  j += "\n    \"fuse_unk\": ";
  j += src.fuse_unk ? "true" : "false";
  j += ",\n    \"byte_fallback\": ";
  j += src.byte_fallback ? "true" : "false";
  j += ",\n    \"ignore_merges\": ";
  j += src.ignore_merges ? "true" : "false";
  j += ",\n    \"vocab\": {";
  first = true;
  int32_t max_id = -1;
  for (const auto& [piece, id] : src.vocab) {
    if (id >= gemma4::kVocabSize) continue;
    j += first ? "\n      " : ",\n      ";
    first = false;
    AppendQuoted(renamed(piece), &j);
    j += ": ";
    j += std::to_string(id);
    max_id = std::max(max_id, id);
  }
  j += "\n    },\n    \"merges\": [";
  first = true;
  for (const auto& [a, b] : src.merges) {
    j += first ? "\n      [" : ",\n      [";
    first = false;
    AppendQuoted(renamed(a), &j);
    j += ", ";
    AppendQuoted(renamed(b), &j);
    j += ']';
  }
  j += "\n    ]\n  }\n}\n";
  files.vocab_size = max_id + 1;

  files.tokenizer_config_json =
      "{\n"
      "  \"add_bos_token\": false,\n"
      "  \"add_eos_token\": false,\n"
      "  \"bos_token\": \"<bos>\",\n"
      "  \"eos_token\": \"<eos>\",\n"
      "  \"pad_token\": \"<pad>\",\n"
      "  \"unk_token\": \"<unk>\",\n"
      "  \"padding_side\": \"left\",\n"
      "  \"clean_up_tokenization_spaces\": false,\n"
      "  \"spaces_between_special_tokens\": false,\n"
      "  \"model_max_length\": 131072,\n"
      "  \"tokenizer_class\": \"GemmaTokenizer\"\n"
      "}\n";
  files.chat_template_jinja = Gemma4ChatTemplate(large_model_template);
  return files;
}

StatusOr<int32_t> WriteGemma4TokenizerFiles(const std::string& gemma3_tokenizer_json,
                                            const std::string& out_dir,
                                            bool large_model_template) {
  namespace fs = std::filesystem;
  G4_ASSIGN_OR_RETURN(std::unique_ptr<TokenizerJson> src, ReadTokenizerJson(gemma3_tokenizer_json));
  StatusOr<Gemma4TokenizerFiles> files = MakeGemma4TokenizerFiles(*src, large_model_template);
  if (!files.ok()) return files.status().WithContext(gemma3_tokenizer_json);
  G4_RETURN_IF_ERROR(WriteFile(fs::path(out_dir) / "tokenizer.json", files->tokenizer_json));
  G4_RETURN_IF_ERROR(
      WriteFile(fs::path(out_dir) / "tokenizer_config.json", files->tokenizer_config_json));
  G4_RETURN_IF_ERROR(
      WriteFile(fs::path(out_dir) / "chat_template.jinja", files->chat_template_jinja));
  return files->vocab_size;
}

}  // namespace g4
