// Strict UTF-8 decoding (RFC 3629 table 3-7 of the Unicode standard: the valid second-byte ranges
// after E0, ED, F0 and F4 exclude overlongs, surrogates and values above U+10FFFF).
#include "tokenizer/utf8.h"

namespace g4::utf8 {
namespace {

inline bool IsCont(uint8_t b) { return (b & 0xC0) == 0x80; }

// Valid range of the second byte after lead byte `b0` (the other continuations are 80..BF), and
// the sequence length; 0 length for a byte that cannot start a sequence.
struct LeadInfo {
  int length;
  uint8_t lo, hi;
};

inline LeadInfo Lead(uint8_t b0) {
  if (b0 < 0x80) return {1, 0, 0};
  if (b0 < 0xC2) return {0, 0, 0};  // continuation byte or overlong 2-byte lead
  if (b0 < 0xE0) return {2, 0x80, 0xBF};
  if (b0 == 0xE0) return {3, 0xA0, 0xBF};
  if (b0 == 0xED) return {3, 0x80, 0x9F};  // excludes surrogates D800..DFFF
  if (b0 < 0xF0) return {3, 0x80, 0xBF};
  if (b0 == 0xF0) return {4, 0x90, 0xBF};
  if (b0 < 0xF4) return {4, 0x80, 0xBF};
  if (b0 == 0xF4) return {4, 0x80, 0x8F};
  return {0, 0, 0};
}

}  // namespace

size_t DecodeOne(std::string_view s, uint32_t* code_point) {
  if (s.empty()) return 0;
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  const LeadInfo li = Lead(p[0]);
  if (li.length == 0) return 0;
  if (li.length == 1) {
    if (code_point) *code_point = p[0];
    return 1;
  }
  if (s.size() < static_cast<size_t>(li.length)) return 0;
  if (p[1] < li.lo || p[1] > li.hi) return 0;
  for (int i = 2; i < li.length; ++i) {
    if (!IsCont(p[i])) return 0;
  }
  if (code_point) {
    uint32_t cp = p[0] & (0x7F >> li.length);
    for (int i = 1; i < li.length; ++i) cp = (cp << 6) | (p[i] & 0x3F);
    *code_point = cp;
  }
  return static_cast<size_t>(li.length);
}

void Append(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

bool IsValid(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    if (static_cast<uint8_t>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const size_t n = DecodeOne(s.substr(i));
    if (n == 0) return false;
    i += n;
  }
  return true;
}

size_t CompletePrefix(std::string_view s) {
  // Only the last three bytes can be the start of an unfinished sequence.
  const size_t n = s.size();
  const size_t first = n > 3 ? n - 3 : 0;
  for (size_t start = first; start < n; ++start) {
    const auto* p = reinterpret_cast<const uint8_t*>(s.data()) + start;
    const LeadInfo li = Lead(p[0]);
    if (li.length <= 1) continue;
    const size_t have = n - start;
    if (have >= static_cast<size_t>(li.length)) continue;  // complete (valid or not)
    // Could the bytes present still be the prefix of a valid sequence?
    bool viable = true;
    if (have >= 2 && (p[1] < li.lo || p[1] > li.hi)) viable = false;
    if (have >= 3 && !IsCont(p[2])) viable = false;
    if (viable) return start;
  }
  return n;
}

size_t IllFormedLength(std::string_view s) {
  if (s.empty()) return 0;
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  const LeadInfo li = Lead(p[0]);
  if (li.length <= 1) return 1;  // ASCII is never ill-formed; callers ask only where it is
  // The lead and the continuations that still fit its table row.
  size_t k = 1;
  while (k < static_cast<size_t>(li.length) && k < s.size()) {
    const bool fits = k == 1 ? p[1] >= li.lo && p[1] <= li.hi : IsCont(p[k]);
    if (!fits) break;
    ++k;
  }
  return k;
}

std::string Sanitize(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const size_t n = DecodeOne(s.substr(i));
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      i += IllFormedLength(s.substr(i));
    } else {
      out.append(s.data() + i, n);
      i += n;
    }
  }
  return out;
}

}  // namespace g4::utf8
