// UTF-8 validation and repair: see utf8.h. Follows the well-formed byte sequence table of the
// Unicode standard (Table 3-7).
#include "server/openai/utf8.h"

#include <cstdint>

namespace g4::openai {
namespace {

// Length of the well-formed sequence starting at text[i], or 0 when the bytes there are
// ill-formed. *consumed is how many bytes form the maximal ill-formed subpart (>= 1) in that
// case, and *truncated says whether the bytes were a valid prefix cut off by the end of text.
size_t SequenceLength(std::string_view text, size_t i, size_t* consumed, bool* truncated) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
  const uint8_t b0 = byte(i);
  *truncated = false;
  *consumed = 1;
  if (b0 < 0x80) return 1;
  size_t need;
  uint8_t lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 3;
    if (b0 == 0xE0) lo = 0xA0;  // no overlongs
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 4;
    if (b0 == 0xF0) lo = 0x90;  // no overlongs
    if (b0 == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return 0;  // continuation byte, C0/C1 or F5..FF: never valid as a lead
  }
  for (size_t k = 1; k < need; ++k) {
    if (i + k >= text.size()) {
      *truncated = true;
      *consumed = k;
      return 0;
    }
    const uint8_t b = byte(i + k);
    const uint8_t min = k == 1 ? lo : 0x80, max = k == 1 ? hi : 0xBF;
    if (b < min || b > max) {
      *consumed = k;
      return 0;
    }
  }
  return need;
}

}  // namespace

bool IsValidUtf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    size_t consumed;
    bool truncated;
    const size_t n = SequenceLength(text, i, &consumed, &truncated);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string SanitizeUtf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    size_t consumed;
    bool truncated;
    const size_t n = SequenceLength(text, i, &consumed, &truncated);
    if (n > 0) {
      out.append(text.substr(i, n));
      i += n;
    } else {
      out.append("\xEF\xBF\xBD");
      i += consumed;
    }
  }
  return out;
}

size_t CompleteUtf8PrefixLength(std::string_view text) {
  // Only the last three bytes can start an incomplete character.
  const size_t first = text.size() > 3 ? text.size() - 3 : 0;
  for (size_t i = first; i < text.size(); ++i) {
    const uint8_t b = static_cast<uint8_t>(text[i]);
    if (b < 0xC0) continue;  // ASCII or a continuation byte: not a lead
    size_t consumed;
    bool truncated;
    SequenceLength(text, i, &consumed, &truncated);
    if (truncated) return i;
  }
  return text.size();
}

}  // namespace g4::openai
