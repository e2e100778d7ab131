// JsonScanner: strict RFC 8259 scanning with a fast path for strings without escapes (nearly all
// of tokenizer.json), validating UTF-8 as it goes so no invalid piece reaches the vocabulary.
#include "tokenizer/json_scan.h"

#include <cstring>

#include "tokenizer/utf8.h"

namespace g4 {
namespace {

struct PlainTable {
  bool v[256];
  constexpr PlainTable() : v() {
    for (int c = 0x20; c < 0x80; ++c) v[c] = c != '"' && c != '\\';
  }
};
constexpr PlainTable kPlainTable;
constexpr const bool* kPlainStringByte = kPlainTable.v;

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

Status JsonScanner::Error(std::string_view expected) const {
  if (pos_ >= text_.size()) {
    return DataLoss("the JSON text ends at byte " + std::to_string(text_.size()) +
                    " where " + std::string(expected) + " was expected (truncated file?)");
  }
  std::string got;
  const unsigned char c = static_cast<unsigned char>(text_[pos_]);
  if (c >= 0x20 && c < 0x7F) {
    got = std::string("'") + static_cast<char>(c) + "'";
  } else {
    static const char* kHex = "0123456789ABCDEF";
    got = std::string("byte 0x") + kHex[c >> 4] + kHex[c & 15];
  }
  return InvalidArgument("expected " + std::string(expected) + " at byte " +
                         std::to_string(pos_) + ", found " + got);
}

Status JsonScanner::Expect(char c) {
  if (Peek() != c) return Error(std::string("'") + c + "'");
  ++pos_;
  return Status::Ok();
}

Status JsonScanner::ReadString(std::string_view* out, std::string* scratch) {
  if (Peek() != '"') return Error("a string");
  const size_t begin = ++pos_;
  const size_t n = text_.size();
  const char* d = text_.data();
  while (pos_ < n) {
    // Fast path: printable ASCII other than '"' and '\\' (nearly every byte of the file).
    while (pos_ < n && kPlainStringByte[static_cast<unsigned char>(d[pos_])]) ++pos_;
    if (pos_ >= n) break;
    const unsigned char c = static_cast<unsigned char>(d[pos_]);
    if (c == '"') {
      *out = text_.substr(begin, pos_ - begin);
      ++pos_;
      return Status::Ok();
    }
    if (c == '\\') {
      G4_RETURN_IF_ERROR(DecodeEscapes(begin, scratch));
      *out = *scratch;
      return Status::Ok();
    }
    if (c < 0x20) return Error("a string character (control characters must be escaped)");
    if (c < 0x80) {
      ++pos_;
      continue;
    }
    const size_t len = utf8::DecodeOne(text_.substr(pos_));
    if (len == 0) {
      if (n - pos_ < 4 && utf8::CompletePrefix(text_.substr(pos_)) == 0) {
        pos_ = n;  // a multi-byte character cut off by the end of the file
        return Error("the rest of a string");
      }
      return Error("valid UTF-8 inside a string");
    }
    pos_ += len;
  }
  return Error("the end of a string ('\"')");
}

// Continues ReadString from the first backslash: copies what came before and decodes the rest.
Status JsonScanner::DecodeEscapes(size_t begin, std::string* scratch) {
  scratch->assign(text_.data() + begin, pos_ - begin);
  const size_t n = text_.size();
  while (pos_ < n) {
    const unsigned char c = static_cast<unsigned char>(text_[pos_]);
    if (c == '"') {
      ++pos_;
      return Status::Ok();
    }
    if (c < 0x20) return Error("a string character (control characters must be escaped)");
    if (c >= 0x80) {
      const size_t len = utf8::DecodeOne(text_.substr(pos_));
      if (len == 0) return Error("valid UTF-8 inside a string");
      scratch->append(text_.data() + pos_, len);
      pos_ += len;
      continue;
    }
    if (c != '\\') {
      scratch->push_back(static_cast<char>(c));
      ++pos_;
      continue;
    }
    if (++pos_ >= n) return Error("an escape character");
    const char e = text_[pos_++];
    switch (e) {
      case '"': scratch->push_back('"'); break;
      case '\\': scratch->push_back('\\'); break;
      case '/': scratch->push_back('/'); break;
      case 'b': scratch->push_back('\b'); break;
      case 'f': scratch->push_back('\f'); break;
      case 'n': scratch->push_back('\n'); break;
      case 'r': scratch->push_back('\r'); break;
      case 't': scratch->push_back('\t'); break;
      case 'u': {
        auto hex4 = [&](uint32_t* v) -> Status {
          if (n - pos_ < 4) {
            pos_ = n;
            return Error("4 hex digits after \\u");
          }
          uint32_t r = 0;
          for (int i = 0; i < 4; ++i) {
            const int h = HexValue(text_[pos_]);
            if (h < 0) return Error("a hex digit in a \\u escape");
            r = (r << 4) | static_cast<uint32_t>(h);
            ++pos_;
          }
          *v = r;
          return Status::Ok();
        };
        uint32_t cp = 0;
        G4_RETURN_IF_ERROR(hex4(&cp));
        if (cp >= 0xDC00 && cp <= 0xDFFF) {
          pos_ -= 6;
          return Error("a \\u escape that is not a lone low surrogate");
        }
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          if (n - pos_ < 2 || text_[pos_] != '\\' || text_[pos_ + 1] != 'u') {
            return Error("a \\u escape with the low surrogate after a high surrogate");
          }
          pos_ += 2;
          uint32_t lo = 0;
          G4_RETURN_IF_ERROR(hex4(&lo));
          if (lo < 0xDC00 || lo > 0xDFFF) {
            pos_ -= 6;
            return Error("a low surrogate (\\uDC00..\\uDFFF) after a high surrogate");
          }
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        }
        utf8::Append(cp, scratch);
        break;
      }
      default:
        pos_ -= 1;
        return Error("a valid escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)");
    }
  }
  return Error("the end of a string ('\"')");
}

Status JsonScanner::ReadInt(int64_t* out) {
  const char first = Peek();
  const size_t begin = pos_;
  bool neg = false;
  if (first == '-') {
    neg = true;
    ++pos_;
  }
  if (pos_ >= text_.size() || text_[pos_] < '0' || text_[pos_] > '9') {
    pos_ = begin;
    return Error("an integer");
  }
  int64_t v = 0;
  while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
    if (v > (INT64_MAX - 9) / 10) {
      pos_ = begin;
      return Error("an integer that fits in 64 bits");
    }
    v = v * 10 + (text_[pos_] - '0');
    ++pos_;
  }
  if (pos_ < text_.size() && (text_[pos_] == '.' || text_[pos_] == 'e' || text_[pos_] == 'E')) {
    pos_ = begin;
    return Error("an integer (no fraction or exponent)");
  }
  *out = neg ? -v : v;
  return Status::Ok();
}

Status JsonScanner::ReadBool(bool* out) {
  Peek();
  if (text_.substr(pos_, 4) == "true") {
    pos_ += 4;
    *out = true;
    return Status::Ok();
  }
  if (text_.substr(pos_, 5) == "false") {
    pos_ += 5;
    *out = false;
    return Status::Ok();
  }
  return Error("true or false");
}

Status JsonScanner::SkipValue(std::string_view* raw) {
  Peek();
  const size_t begin = pos_;
  G4_RETURN_IF_ERROR(SkipValueAt(0));
  if (raw) *raw = text_.substr(begin, pos_ - begin);
  return Status::Ok();
}

Status JsonScanner::SkipValueAt(int depth) {
  if (depth > 256) return Error("less deeply nested JSON (depth limit 256)");
  const char c = Peek();
  switch (c) {
    case '"': {
      std::string_view s;
      return ReadString(&s, &skip_scratch_);
    }
    case '{':
      return ForEachMember([&](std::string_view) { return SkipValueAt(depth + 1); });
    case '[':
      return ForEachElement([&](size_t) { return SkipValueAt(depth + 1); });
    case 't':
    case 'f': {
      bool b;
      return ReadBool(&b);
    }
    case 'n':
      if (text_.substr(pos_, 4) == "null") {
        pos_ += 4;
        return Status::Ok();
      }
      return Error("null");
    default: {
      // Number: -?int frac? exp?
      const size_t begin = pos_;
      if (pos_ < text_.size() && text_[pos_] == '-') ++pos_;
      auto digits = [&] {
        const size_t d0 = pos_;
        while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
        return pos_ > d0;
      };
      if (!digits()) {
        pos_ = begin;
        return Error("a JSON value");
      }
      if (pos_ < text_.size() && text_[pos_] == '.') {
        ++pos_;
        if (!digits()) return Error("digits after '.'");
      }
      if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
        ++pos_;
        if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
        if (!digits()) return Error("digits in an exponent");
      }
      return Status::Ok();
    }
  }
}

}  // namespace g4
