// FieldReader: typed, non-throwing access to the fields of one JSON object in a request body.
// Every wrong type becomes a 400 ApiError whose `param` names the field (with the path of the
// enclosing object, e.g. "stream_options.include_usage"), so a client error is never a 500.
//
// JSON null counts as absent everywhere: the OpenAI schemas declare almost every optional field
// nullable, and clients send `"stop": null` meaning "the default".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/openai/api_error.h"

namespace g4::openai {

// An error or nothing: `if (auto e = reader.Bool(...)) return *e;`.
using MaybeError = std::optional<ApiError>;

// "a string", "an array", "a number", ... for messages.
std::string JsonTypePhrase(const nlohmann::json& value);

class FieldReader {
 public:
  // `object` must outlive the reader. `path` prefixes every param ("" at the top level,
  // "stream_options." inside that object).
  explicit FieldReader(const nlohmann::json& object, std::string path = "")
      : object_(object), path_(std::move(path)) {}

  // The field, or nullptr when it is absent or null.
  const nlohmann::json* Find(std::string_view key) const;
  // True when the field is present and not null.
  bool Has(std::string_view key) const { return Find(key) != nullptr; }
  // The param name of a field: path + key.
  std::string Param(std::string_view key) const { return path_ + std::string(key); }

  // Each reader leaves *out untouched when the field is absent or null.
  MaybeError Bool(std::string_view key, bool* out) const;
  MaybeError Number(std::string_view key, std::optional<double>* out) const;
  // An integer in int64 range; a float with an integral value (16.0) is accepted, as the
  // pydantic models of vLLM accept it.
  MaybeError Int(std::string_view key, std::optional<int64_t>* out) const;
  MaybeError String(std::string_view key, std::optional<std::string>* out) const;
  // The field when it is an object (nullptr when absent or null).
  MaybeError Object(std::string_view key, const nlohmann::json** out) const;
  // The field when it is an array (nullptr when absent or null).
  MaybeError Array(std::string_view key, const nlohmann::json** out) const;

  // The wrong-type error for `key`: "<param> must be <expected>, got <type phrase>".
  ApiError TypeError(std::string_view key, std::string_view expected,
                     const nlohmann::json& got) const;

 private:
  const nlohmann::json& object_;
  std::string path_;
};

// Deepest nesting of arrays and objects a request body may have. Copying, dumping and
// rendering a JSON value recurse once per level, so a body of 100000 '[' would overflow the
// stack of whatever touches it after parsing; no OpenAI request needs more than a few levels
// (tool schemas nest deepest).
inline constexpr int kMaxJsonDepth = 128;

// The JSON object a request body holds: a 400 naming the parse position ("parse error at line
// 1, column 5: ...") for malformed JSON, a 400 for nesting past kMaxJsonDepth, a 400 for a body
// that is not an object.
ApiResult<nlohmann::json> ParseJsonObject(std::string_view body);

// A short description of a value for an error message: numbers as written, strings quoted
// (cut at 40 bytes), anything else by its type ("an object"). Never recurses.
std::string DescribeJsonValue(const nlohmann::json& value);

// Nothing when the body's `model` is absent, empty or `served_name`; else a 404 (or a 400 for
// a non-string).
MaybeError CheckModel(const FieldReader& body, const std::string& served_name);

// An integral value of `value` in int64 range (integers, or floats with an integral value).
std::optional<int64_t> AsInt64(const nlohmann::json& value);

}  // namespace g4::openai
