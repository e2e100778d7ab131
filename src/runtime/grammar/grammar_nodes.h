// Node builders shared by the schema and tool-call compilers.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "runtime/grammar/grammar_internal.h"

namespace g4::grammar {

inline constexpr int64_t kUnbounded = int64_t{1} << 30;  // counts and lengths without a maximum

// Text -> symbols; in the Gemma dialect every "<|\"|>" becomes kSymQuote.
std::vector<int> TextSymbols(std::string_view text, Dialect dialect);

// Node builders shared by the compilers.
int32_t AddNode(Grammar* g, Node node);
int32_t AddLiteral(Grammar* g, std::vector<int> symbols, Dialect dialect);
int32_t AddAlt(Grammar* g, std::vector<int32_t> options);
// Any JSON value in `dialect` (objects with any keys, arrays, strings, numbers, literals).
int32_t AnyValue(Grammar* g, Dialect dialect);
// An object with any keys and any values.
int32_t AnyObject(Grammar* g, Dialect dialect);
int32_t WsNode(Grammar* g);
int32_t AddString(Grammar* g, Dialect d, int64_t min, int64_t max);
// An object with any keys (JSON strings, or Gemma bare keys) and values `value`.
int32_t AddFreeObject(Grammar* g, Dialect d, int32_t value);

}  // namespace g4::grammar
