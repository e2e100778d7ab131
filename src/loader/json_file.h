// JSON input for the loader: whole-file reads and parsing into nlohmann::json with errors
// reported as Status (never as exceptions) and naming the file and the parser's byte position.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace g4 {

// Deepest nesting of arrays/objects the parsers accept: checkpoint JSON is a few levels deep,
// and a deeper hostile file would make nlohmann's recursive dump() and comparisons overflow the
// stack.
inline constexpr int kMaxJsonFileDepth = 128;

// The byte offset of the first array/object bracket (outside strings) nested deeper than
// `limit`, or npos. A cheap pre-scan run before parsing; malformed JSON is left to the parser.
size_t JsonTooDeepAt(std::string_view text, int limit);

// Reads and parses `path`. NotFound if it does not exist; InvalidArgument
// "PATH: malformed JSON: ..." (with the byte position) if it does not parse or nests deeper
// than kMaxJsonFileDepth.
StatusOr<nlohmann::json> ReadJsonFile(const std::string& path);

// Parses `text`; `what_for_messages` (usually a path) starts every error message.
StatusOr<nlohmann::json> ParseJson(std::string_view text, const std::string& what_for_messages);

// As above, with nlohmann's parser callback (called for every parse event; see
// nlohmann::json::parser_callback_t). The callback must not throw.
StatusOr<nlohmann::json> ParseJson(std::string_view text, const std::string& what_for_messages,
                                   const nlohmann::json::parser_callback_t& callback);

}  // namespace g4
