// tokenizer.json reading: the big arrays (vocab, merges, added_tokens) are walked with
// JsonScanner and kept as views into the mapped file; the small pipeline sections are parsed with
// nlohmann and checked against what the tokenizer implements.
#include "tokenizer/tokenizer_json.h"

#include <nlohmann/json.hpp>

#include "loader/json_file.h"
#include "tokenizer/json_scan.h"

namespace g4 {
namespace {

constexpr int64_t kMaxId = int64_t{1} << 24;  // far above any real vocabulary; guards allocations

class Parser {
 public:
  Parser(std::string_view text, const std::string& source, TokenizerJson* out)
      : scan_(text), source_(source), out_(out) {}

  Status Run();

 private:
  Status Fail(const std::string& path, const Status& s) const {
    return Status(s.code(), source_ + ": " + path + ": " + s.message());
  }
  Status Fail(const std::string& path, const std::string& message,
              StatusCode code = StatusCode::kInvalidArgument) const {
    return Status(code, source_ + ": " + path + ": " + message);
  }
  // A string whose view stays valid: into the text, or into out_->unescaped.
  Status ReadStable(std::string_view* s) {
    G4_RETURN_IF_ERROR(scan_.ReadString(s, &scratch_));
    if (s->data() == scratch_.data()) {
      out_->unescaped.push_back(scratch_);
      *s = out_->unescaped.back();
    }
    return Status::Ok();
  }

  Status ParseModel();
  Status ParseVocab();
  Status ParseMerges();
  Status ParseAddedTokens();
  Status ParsePipeline();

  JsonScanner scan_;
  const std::string& source_;
  TokenizerJson* out_;
  std::string scratch_;
  bool saw_model_ = false, saw_vocab_ = false, saw_merges_ = false;
  std::string model_type_;
};

Status Parser::Run() {
  if (scan_.Peek() != '{') {
    return Fail("top level", scan_.Error("a JSON object ('{')"));
  }
  Status s = scan_.ForEachMember([&](std::string_view key) -> Status {
    std::string_view* raw = nullptr;
    if (key == "model") return ParseModel();
    if (key == "added_tokens") return ParseAddedTokens();
    if (key == "version") raw = &out_->raw_version;
    if (key == "truncation") raw = &out_->raw_truncation;
    if (key == "padding") raw = &out_->raw_padding;
    if (key == "normalizer") raw = &out_->raw_normalizer;
    if (key == "pre_tokenizer") raw = &out_->raw_pre_tokenizer;
    if (key == "post_processor") raw = &out_->raw_post_processor;
    if (key == "decoder") raw = &out_->raw_decoder;
    const Status st = scan_.SkipValue(raw);
    if (!st.ok()) return Fail(std::string(key), st);
    return Status::Ok();
  });
  if (!s.ok()) {
    // Errors from nested parsers already carry the source; scanner errors at this level do not.
    if (s.message().rfind(source_ + ": ", 0) == 0) return s;
    return Fail("top level", s);
  }
  if (!scan_.AtEnd()) return Fail("top level", scan_.Error("the end of the file after the object"));
  if (!saw_model_) return Fail("model", "missing (not a Hugging Face tokenizer.json?)");
  if (!saw_vocab_) return Fail("model.vocab", "missing");
  if (!saw_merges_ && model_type_ == "BPE") return Fail("model.merges", "missing");
  return ParsePipeline();
}

Status Parser::ParseModel() {
  saw_model_ = true;
  if (scan_.Peek() != '{') return Fail("model", scan_.Error("an object"));
  bool dropout_set = false;
  std::string bad_affix;
  Status s = scan_.ForEachMember([&](std::string_view key) -> Status {
    if (key == "vocab") return ParseVocab();
    if (key == "merges") return ParseMerges();
    const std::string path = "model." + std::string(key);
    Status st;
    if (key == "type") {
      std::string_view t;
      st = scan_.ReadString(&t, &scratch_);
      model_type_ = t;
    } else if (key == "unk_token") {
      if (scan_.PeekIsNull()) {
        st = scan_.SkipValue();
      } else {
        std::string_view t;
        st = scan_.ReadString(&t, &scratch_);
        out_->unk_token = t;
      }
    } else if (key == "byte_fallback" || key == "fuse_unk" || key == "ignore_merges") {
      bool* flag = key == "byte_fallback" ? &out_->byte_fallback
                   : key == "fuse_unk"    ? &out_->fuse_unk
                                          : &out_->ignore_merges;
      if (scan_.PeekIsNull()) {
        st = scan_.SkipValue();
      } else {
        st = scan_.ReadBool(flag);
      }
    } else if (key == "dropout") {
      std::string_view raw;
      st = scan_.SkipValue(&raw);
      dropout_set = raw != "null" && raw != "0" && raw != "0.0";
    } else if (key == "continuing_subword_prefix" || key == "end_of_word_suffix") {
      std::string_view raw;
      st = scan_.SkipValue(&raw);
      if (raw != "null" && raw != "\"\"") bad_affix = std::string(key);
    } else {
      st = scan_.SkipValue();
    }
    if (!st.ok()) return Fail(path, st);
    return Status::Ok();
  });
  if (!s.ok()) {
    if (s.message().rfind(source_ + ": ", 0) == 0) return s;
    return Fail("model", s);
  }
  if (model_type_.empty() && saw_merges_) model_type_ = "BPE";
  if (model_type_ != "BPE") {
    return Fail("model.type", "'" + model_type_ + "' is not supported (g4 implements BPE only)",
                StatusCode::kUnimplemented);
  }
  if (dropout_set) {
    return Fail("model.dropout", "BPE dropout is not supported", StatusCode::kUnimplemented);
  }
  if (!bad_affix.empty()) {
    return Fail("model." + bad_affix, "is set; subword prefixes/suffixes are not supported",
                StatusCode::kUnimplemented);
  }
  return Status::Ok();
}

Status Parser::ParseVocab() {
  saw_vocab_ = true;
  if (scan_.Peek() != '{') return Fail("model.vocab", scan_.Error("an object of piece: id"));
  out_->vocab.reserve(1 << 18);
  Status s = scan_.ForEachMember([&](std::string_view key) -> Status {
    // An escaped key lives in ForEachMember's scratch buffer; give it stable storage.
    if (!scan_.InText(key)) {
      out_->unescaped.emplace_back(key);
      key = out_->unescaped.back();
    }
    int64_t id = 0;
    const size_t at = scan_.pos();
    Status st = scan_.ReadInt(&id);
    if (!st.ok()) return Fail("model.vocab[\"" + std::string(key) + "\"]", st);
    if (id < 0 || id >= kMaxId) {
      return Fail("model.vocab[\"" + std::string(key) + "\"]",
                  "id " + std::to_string(id) + " at byte " + std::to_string(at) +
                      " is outside [0, " + std::to_string(kMaxId) + ")");
    }
    out_->vocab.emplace_back(key, static_cast<int32_t>(id));
    return Status::Ok();
  });
  if (!s.ok()) {
    if (s.message().rfind(source_ + ": ", 0) == 0) return s;
    return Fail("model.vocab (entry " + std::to_string(out_->vocab.size()) + ")", s);
  }
  return Status::Ok();
}

Status Parser::ParseMerges() {
  saw_merges_ = true;
  if (scan_.Peek() != '[') return Fail("model.merges", scan_.Error("an array"));
  out_->merges.reserve(1 << 19);
  bool saw_string = false, saw_pair = false;
  Status s = scan_.ForEachElement([&](size_t i) -> Status {
    // Built only on error: this runs half a million times.
    auto path = [i] { return "model.merges[" + std::to_string(i) + "]"; };
    const char c = scan_.Peek();
    if (c == '"') {
      saw_string = true;
      std::string_view line;
      const size_t at = scan_.pos();
      Status st = ReadStable(&line);
      if (!st.ok()) return Fail(path(), st);
      const size_t space = line.find(' ');
      if (space == std::string_view::npos || line.find(' ', space + 1) != std::string_view::npos ||
          space == 0 || space + 1 == line.size()) {
        return Fail(path(), "'" + std::string(line) + "' at byte " + std::to_string(at) +
                              " is not two pieces separated by one space");
      }
      out_->merges.emplace_back(line.substr(0, space), line.substr(space + 1));
      return Status::Ok();
    }
    if (c == '[') {
      saw_pair = true;
      std::string_view parts[2];
      int n = 0;
      Status st = scan_.ForEachElement([&](size_t j) -> Status {
        if (j >= 2) return scan_.Error("']' (a merge has exactly two pieces)");
        n = static_cast<int>(j) + 1;
        return ReadStable(&parts[j]);
      });
      if (!st.ok()) return Fail(path(), st);
      if (n != 2) return Fail(path(), "a merge has exactly two pieces, found " + std::to_string(n));
      out_->merges.emplace_back(parts[0], parts[1]);
      return Status::Ok();
    }
    return Fail(path(), scan_.Error("a string \"a b\" or an array [\"a\", \"b\"]"));
  });
  if (!s.ok()) {
    if (s.message().rfind(source_ + ": ", 0) == 0) return s;
    return Fail("model.merges (after " + std::to_string(out_->merges.size()) + " merges)", s);
  }
  out_->merges_as_strings = saw_string && !saw_pair;
  return Status::Ok();
}

Status Parser::ParseAddedTokens() {
  if (scan_.Peek() != '[') return Fail("added_tokens", scan_.Error("an array"));
  Status s = scan_.ForEachElement([&](size_t i) -> Status {
    const std::string path = "added_tokens[" + std::to_string(i) + "]";
    if (scan_.Peek() != '{') return Fail(path, scan_.Error("an object"));
    AddedTokenSpec t;
    bool has_id = false, has_content = false;
    Status st = scan_.ForEachMember([&](std::string_view key) -> Status {
      if (key == "id") {
        int64_t id = 0;
        G4_RETURN_IF_ERROR(scan_.ReadInt(&id));
        if (id < 0 || id >= kMaxId) return InvalidArgument("id " + std::to_string(id) + " is out of range");
        t.id = static_cast<int32_t>(id);
        has_id = true;
        return Status::Ok();
      }
      if (key == "content") {
        has_content = true;
        return ReadStable(&t.content);
      }
      bool* flag = key == "special"       ? &t.special
                   : key == "lstrip"      ? &t.lstrip
                   : key == "rstrip"      ? &t.rstrip
                   : key == "normalized"  ? &t.normalized
                   : key == "single_word" ? &t.single_word
                                          : nullptr;
      if (flag) return scan_.ReadBool(flag);
      return scan_.SkipValue();
    });
    if (!st.ok()) return Fail(path, st);
    if (!has_id) return Fail(path, "has no \"id\"");
    if (!has_content || t.content.empty()) return Fail(path, "has no (or an empty) \"content\"");
    if (t.single_word) {
      return Fail(path, "single_word added tokens are not supported", StatusCode::kUnimplemented);
    }
    out_->added_tokens.push_back(t);
    return Status::Ok();
  });
  if (!s.ok()) {
    if (s.message().rfind(source_ + ": ", 0) == 0) return s;
    return Fail("added_tokens", s);
  }
  return Status::Ok();
}

// ---- pipeline sections (small; parsed with nlohmann) ----

Status LiteralPattern(const nlohmann::json& step, const std::string& path, std::string* out) {
  const auto it = step.find("pattern");
  if (it == step.end() || !it->is_object()) return InvalidArgument(path + ".pattern is missing");
  if (it->contains("String") && (*it)["String"].is_string()) {
    *out = (*it)["String"].get<std::string>();
    if (out->empty()) return InvalidArgument(path + ".pattern.String is empty");
    return Status::Ok();
  }
  return Unimplemented(path + ": only literal (\"String\") patterns are supported, not " +
                       it->dump());
}

std::string TypeOf(const nlohmann::json& j) {
  const auto it = j.find("type");
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string("(no type)");
}

// Parses one pipeline step (a normalizer, pre-tokenizer or decoder) at `path` into `out`.
using StepParser = Status (*)(const nlohmann::json&, const std::string&, TokenizerJson*);

// A "Sequence" step: `parse` on each element of its array `key` ("normalizers", ...).
Status ParseSequence(const nlohmann::json& j, const std::string& path, const std::string& key,
                     StepParser parse, TokenizerJson* out) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_array()) return InvalidArgument(path + "." + key + " is missing");
  for (size_t i = 0; i < it->size(); ++i) {
    G4_RETURN_IF_ERROR(parse((*it)[i], path + "." + key + "[" + std::to_string(i) + "]", out));
  }
  return Status::Ok();
}

// A "Replace" step: a literal pattern and its "content".
Status ParseReplace(const nlohmann::json& j, const std::string& path, Replacement* r) {
  G4_RETURN_IF_ERROR(LiteralPattern(j, path, &r->from));
  if (!j.contains("content") || !j["content"].is_string()) {
    return InvalidArgument(path + ".content is missing");
  }
  r->to = j["content"].get<std::string>();
  return Status::Ok();
}

Status Normalizer(const nlohmann::json& j, const std::string& path, TokenizerJson* out) {
  if (j.is_null()) return Status::Ok();
  if (!j.is_object()) return InvalidArgument(path + " is not an object");
  const std::string type = TypeOf(j);
  if (type == "Sequence") return ParseSequence(j, path, "normalizers", Normalizer, out);
  if (type == "Replace") {
    Replacement r;
    G4_RETURN_IF_ERROR(ParseReplace(j, path, &r));
    out->normalizer.push_back(std::move(r));
    return Status::Ok();
  }
  return Unimplemented(path + ": normalizer type '" + type + "' is not supported");
}

Status PreTokenizer(const nlohmann::json& j, const std::string& path, TokenizerJson* out) {
  if (j.is_null()) return Status::Ok();
  if (!j.is_object()) return InvalidArgument(path + " is not an object");
  const std::string type = TypeOf(j);
  if (type == "Sequence") return ParseSequence(j, path, "pretokenizers", PreTokenizer, out);
  if (type == "Split") {
    std::string literal;
    G4_RETURN_IF_ERROR(LiteralPattern(j, path, &literal));
    const std::string behavior = j.value("behavior", std::string("Removed"));
    if (behavior != "MergedWithPrevious") {
      return Unimplemented(path + ": Split behavior '" + behavior +
                           "' is not supported (only MergedWithPrevious)");
    }
    if (j.value("invert", false)) return Unimplemented(path + ": inverted Split is not supported");
    if (!out->split_after.empty()) return Unimplemented(path + ": more than one Split");
    out->split_after = literal;
    return Status::Ok();
  }
  return Unimplemented(path + ": pre_tokenizer type '" + type + "' is not supported");
}

Status Decoder(const nlohmann::json& j, const std::string& path, TokenizerJson* out) {
  if (j.is_null()) return Status::Ok();
  if (!j.is_object()) return InvalidArgument(path + " is not an object");
  const std::string type = TypeOf(j);
  if (type == "Sequence") return ParseSequence(j, path, "decoders", Decoder, out);
  if (type == "Replace") {
    Replacement r;
    G4_RETURN_IF_ERROR(ParseReplace(j, path, &r));
    out->decoder_replacements.push_back(std::move(r));
    return Status::Ok();
  }
  if (type == "ByteFallback") {
    out->decoder_byte_fallback = true;
    return Status::Ok();
  }
  if (type == "Fuse") return Status::Ok();  // pieces are concatenated anyway
  return Unimplemented(path + ": decoder type '" + type + "' is not supported");
}

Status Parser::ParsePipeline() {
  struct Section {
    std::string_view raw;
    const char* name;
    StepParser fn;
  };
  const Section sections[] = {{out_->raw_normalizer, "normalizer", Normalizer},
                              {out_->raw_pre_tokenizer, "pre_tokenizer", PreTokenizer},
                              {out_->raw_decoder, "decoder", Decoder}};
  for (const Section& sec : sections) {
    if (sec.raw.empty()) continue;
    G4_ASSIGN_OR_RETURN(nlohmann::json j, ParseJson(sec.raw, source_ + ": " + sec.name));
    const Status s = sec.fn(j, sec.name, out_);
    if (!s.ok()) return Status(s.code(), source_ + ": " + s.message());
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::unique_ptr<TokenizerJson>> ParseTokenizerJson(std::string text,
                                                            const std::string& source) {
  auto out = std::make_unique<TokenizerJson>();
  out->owned_text = std::move(text);  // the views point into it from here on
  Parser parser(out->owned_text, source, out.get());
  G4_RETURN_IF_ERROR(parser.Run());
  return out;
}

StatusOr<std::unique_ptr<TokenizerJson>> ReadTokenizerJson(const std::string& path) {
  auto out = std::make_unique<TokenizerJson>();
  G4_ASSIGN_OR_RETURN(out->file, MappedFile::Open(path));
  Parser parser(out->file->bytes(), path, out.get());  // views into the mapping, no copy
  G4_RETURN_IF_ERROR(parser.Run());
  return out;
}

}  // namespace g4
