// Tools and response_format of a request (server-api.md §2, issue #22): the declared tools,
// the tool choice, and the grammar that constrains the answer. JSON Schemas are compiled here,
// while parsing, so a keyword g4 cannot enforce is a 400 naming it before anything runs.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/grammar/grammar.h"
#include "server/openai/field_reader.h"

namespace g4::openai {

struct OutputConstraints {
  // Chat: the validated OpenAI tools ([{"type": "function", "function": {...}}]); empty: none.
  nlohmann::json tools = nlohmann::json::array();
  enum class ToolChoice { kAuto, kNone, kRequired, kNamed };
  ToolChoice tool_choice = ToolChoice::kAuto;
  std::string tool_name;  // kNamed
  bool parallel_tool_calls = true;

  enum class Format { kText, kJsonObject, kJsonSchema };
  Format format = Format::kText;

  // What constrains sampling: the JSON Schema (or any object), or the tool calls (forced from
  // the first token with kRequired/kNamed; with kAuto from the model's own <|tool_call>).
  std::shared_ptr<const grammar::Grammar> grammar;
  bool grammar_from_tool_call = false;

  // The answer may hold tool calls to parse out (tools declared and the choice is not none).
  bool parse_tool_calls() const { return !tools.empty() && tool_choice != ToolChoice::kNone; }
};

// The readers take the body twice: `r` over the parsed body for validation, and `ordered`, the
// same body parsed as ordered_json, for the grammar compilers (a schema's properties are
// written in the order the client declared them; nlohmann::json would sort them).
//
// tools, tool_choice (and its legacy twin function_call), parallel_tool_calls. Chat only.
MaybeError ReadToolFields(const FieldReader& r, const nlohmann::ordered_json& ordered,
                          OutputConstraints* out);
// response_format: text, json_object, json_schema {name, schema, strict}. Both endpoints; after
// ReadToolFields (a forced tool call and a JSON answer cannot both hold).
MaybeError ReadResponseFormat(const FieldReader& r, const nlohmann::ordered_json& ordered,
                              OutputConstraints* out);

}  // namespace g4::openai
