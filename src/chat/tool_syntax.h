// Gemma 4's tool syntax in both directions (gemma4.md §4.3, server-api.md §14). Writing follows
// the format_argument / format_parameters / format_function_declaration macros of the released
// chat template: keys in Jinja `dictsort` order (case-insensitive), strings wrapped in <|"|>,
// types upper-cased. Reading turns a model-written call body back into JSON, tolerating what
// models and users actually produce: missing closers, '…' or "…" instead of <|"|>, bare words,
// Python's True/False/None.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace g4::tool_syntax {

inline constexpr std::string_view kQuote = "<|\"|>";

// format_argument: strings as <|"|>s<|"|>, true/false, objects {k:v,...} (keys quoted with <|"|>
// if `quote_keys`), arrays [a,b], numbers as JSON writes them, null as "None" (the template is
// rendered by Python Jinja, which prints None; the reader maps it back to null).
std::string FormatValue(const nlohmann::json& value, bool quote_keys);

// The body of "<|tool>...<tool|>" for one OpenAI tool ({"type": "function", "function": {...}},
// or the function object itself): "declaration:NAME{description:<|"|>...<|"|>,parameters:{...}}".
std::string FormatDeclaration(const nlohmann::json& tool);

// "response:NAME{value:<|"|>...<|"|>}" for a string (or any non-object) response,
// "response:NAME{k:v,...}" for an object.
std::string FormatResponse(std::string_view name, const nlohmann::json& response);

// Parses a value in Gemma syntax starting at text[*pos]; advances *pos past it. Never fails: an
// unterminated string or object ends at the end of the text.
nlohmann::ordered_json ParseValue(std::string_view text, size_t* pos);

// Python's str.strip() (what Jinja's `trim` does): removes Unicode whitespace at both ends.
std::string_view Trim(std::string_view s);

}  // namespace g4::tool_syntax
