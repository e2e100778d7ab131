// JsonScanner: a small pull parser over a JSON text held in memory (an mmap of tokenizer.json).
// Gemma's tokenizer.json is 33 MB of about a million short strings; building a DOM of it with
// nlohmann takes over a second, while walking it once and keeping only the strings the tokenizer
// needs takes a few tens of milliseconds. The scanner is strict (RFC 8259: no trailing commas,
// no control characters or invalid UTF-8 inside strings, no lone surrogates) and reports errors
// as Status naming the byte offset; the caller adds the JSON path ("model.merges[12]").
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace g4 {

class JsonScanner {
 public:
  explicit JsonScanner(std::string_view text) : text_(text) {}

  size_t pos() const { return pos_; }
  // True if `s` points into the scanned text (false for a string decoded into a scratch buffer).
  bool InText(std::string_view s) const {
    return s.data() >= text_.data() && s.data() + s.size() <= text_.data() + text_.size();
  }
  bool AtEnd() { SkipWs(); return pos_ >= text_.size(); }

  // The next non-whitespace character, or '\0' at the end of the text.
  char Peek() {
    SkipWs();
    return pos_ < text_.size() ? text_[pos_] : '\0';
  }
  bool PeekIsNull() { return Peek() == 'n'; }

  // Reads a string. If it has no escapes, *out points into the text (valid as long as the text);
  // otherwise it is decoded into *scratch and *out points there.
  Status ReadString(std::string_view* out, std::string* scratch);
  // Reads an integer (no fraction or exponent).
  Status ReadInt(int64_t* out);
  Status ReadBool(bool* out);
  // Skips one value of any type; *raw (if given) receives its exact text.
  Status SkipValue(std::string_view* raw = nullptr);

  // Iterates an object: fn(std::string_view key) -> Status must consume the member's value.
  template <typename Fn>
  Status ForEachMember(Fn&& fn);
  // Iterates an array: fn(size_t index) -> Status must consume the element.
  template <typename Fn>
  Status ForEachElement(Fn&& fn);

  // "expected X at byte N" (InvalidArgument), or "ends at byte N in the middle of a value
  // (truncated?)" (DataLoss) when the text ran out.
  Status Error(std::string_view expected) const;

 private:
  void SkipWs() {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c != ' ' && c != '\n' && c != '\r' && c != '\t') break;
      ++pos_;
    }
  }
  Status Expect(char c);
  Status SkipValueAt(int depth);
  Status DecodeEscapes(size_t begin, std::string* scratch);

  std::string_view text_;
  size_t pos_ = 0;
  std::string skip_scratch_;
};

template <typename Fn>
Status JsonScanner::ForEachMember(Fn&& fn) {
  G4_RETURN_IF_ERROR(Expect('{'));
  if (Peek() == '}') {
    ++pos_;
    return Status::Ok();
  }
  std::string key_scratch;
  while (true) {
    if (Peek() != '"') return Error("a member name (string)");
    std::string_view key;
    G4_RETURN_IF_ERROR(ReadString(&key, &key_scratch));
    G4_RETURN_IF_ERROR(Expect(':'));
    G4_RETURN_IF_ERROR(fn(key));
    const char c = Peek();
    ++pos_;
    if (c == '}') return Status::Ok();
    if (c != ',') {
      --pos_;
      return Error("',' or '}'");
    }
  }
}

template <typename Fn>
Status JsonScanner::ForEachElement(Fn&& fn) {
  G4_RETURN_IF_ERROR(Expect('['));
  if (Peek() == ']') {
    ++pos_;
    return Status::Ok();
  }
  for (size_t i = 0;; ++i) {
    G4_RETURN_IF_ERROR(fn(i));
    const char c = Peek();
    ++pos_;
    if (c == ']') return Status::Ok();
    if (c != ',') {
      --pos_;
      return Error("',' or ']'");
    }
  }
}

}  // namespace g4
