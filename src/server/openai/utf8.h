// UTF-8 hygiene for text that leaves the server (server-api.md §5 "Text hygiene"): a token can
// end in the middle of a multi-byte character, and nlohmann's dump() throws on invalid UTF-8
// unless told to replace it. These helpers let callers hold back an incomplete tail and make
// any string safe to serialise.
#pragma once

#include <string>
#include <string_view>

namespace g4::openai {

// True when `text` is well-formed UTF-8 (no overlongs, no surrogates, nothing above U+10FFFF).
bool IsValidUtf8(std::string_view text);

// `text` with every ill-formed sequence replaced by U+FFFD (one per maximal ill-formed
// subpart, as the Unicode standard recommends and as nlohmann's replace handler does).
std::string SanitizeUtf8(std::string_view text);

// Length of the longest prefix of `text` that does not end inside an incomplete multi-byte
// character: what a streaming detokenizer can emit now; the rest waits for the next token.
// Only an incomplete but still valid-so-far tail is held back; invalid bytes are not (they
// could never become valid, and dumping replaces them).
size_t CompleteUtf8PrefixLength(std::string_view text);

}  // namespace g4::openai
