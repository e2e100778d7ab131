// UTF-8 helpers for the tokenizer: strict decoding (RFC 3629: no overlongs, no surrogates,
// nothing above U+10FFFF) so that every byte of arbitrary input is either part of exactly one
// valid code point or an invalid byte that the encoder sends through byte fallback, and the
// boundary test the streaming decoder uses to never emit half a character.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace g4::utf8 {

// Length (1..4) of the valid UTF-8 sequence at the start of `s`, or 0 if `s` is empty or does not
// start with one (invalid lead byte, bad or missing continuation, overlong, surrogate, > U+10FFFF).
// On success *code_point (if not null) receives the decoded value.
size_t DecodeOne(std::string_view s, uint32_t* code_point = nullptr);

// Appends the UTF-8 encoding of `code_point` (must be <= U+10FFFF and not a surrogate).
void Append(uint32_t code_point, std::string* out);

// True if every byte of `s` belongs to a valid sequence.
bool IsValid(std::string_view s);

// The length of the longest prefix of `s` that does not end inside a sequence that the next bytes
// could still complete. Bytes that can never become valid (a stray continuation, 0xFF, a lead byte
// followed by a non-continuation) count as complete: holding them back would lose them forever.
size_t CompletePrefix(std::string_view s);

// Where `s` does not start with a valid sequence: the length (>= 1) of its maximal ill-formed
// subpart, the lead byte and the continuations that still fit it (Unicode 3.9, "U+FFFD
// substitution of maximal subparts").
size_t IllFormedLength(std::string_view s);

// `s` with every maximal ill-formed subpart replaced by one U+FFFD (as the Unicode standard
// recommends and nlohmann's dump replaces), for output channels that require valid UTF-8: the
// server's JSON, a terminal.
std::string Sanitize(std::string_view s);

}  // namespace g4::utf8
