// FieldReader: see field_reader.h.
#include "server/openai/field_reader.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "loader/json_file.h"
#include "server/openai/json_utf8.h"

namespace g4::openai {

std::string JsonTypePhrase(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::object: return "an object";
    case nlohmann::json::value_t::array: return "an array";
    case nlohmann::json::value_t::string: return "a string";
    case nlohmann::json::value_t::boolean: return "a boolean";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned: return "an integer";
    case nlohmann::json::value_t::number_float: return "a number";
    default: return "an unsupported value";
  }
}

std::optional<int64_t> AsInt64(const nlohmann::json& value) {
  if (value.is_number_integer() && !value.is_number_unsigned()) {
    return value.get<int64_t>();
  }
  if (value.is_number_unsigned()) {
    const uint64_t u = value.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (value.is_number_float()) {
    const double d = value.get<double>();
    // 2^63 itself does not fit; every double below it that is integral does.
    if (!std::isfinite(d) || d != std::floor(d) || d < -9223372036854775808.0 ||
        d >= 9223372036854775808.0) {
      return std::nullopt;
    }
    return static_cast<int64_t>(d);
  }
  return std::nullopt;
}

std::string DescribeJsonValue(const nlohmann::json& value) {
  if (value.is_number() || value.is_boolean() || value.is_null()) return value.dump();
  if (value.is_string()) {
    const std::string& s = value.get_ref<const std::string&>();
    return "\"" + (s.size() > 40 ? s.substr(0, 40) + "..." : s) + "\"";
  }
  return JsonTypePhrase(value);
}

ApiResult<nlohmann::json> ParseJsonObject(std::string_view body) {
  // The parser quotes what it last read, which can be a whole (long) string token.
  constexpr size_t kMaxQuoted = 300;
  if (JsonTooDeepAt(body, kMaxJsonDepth) != std::string_view::npos) {
    return BadRequest("The request body is nested deeper than " + std::to_string(kMaxJsonDepth) +
                      " levels");
  }
  // Before the parser, which would only say "ill-formed UTF-8 byte" at a column.
  if (auto fault = FindUtf8Fault(body)) {
    const std::string at = " (byte " + std::to_string(fault->offset) + ")";
    if (fault->path.empty()) {
      return BadRequest("The request body is not valid UTF-8" + at);
    }
    return BadRequest("Invalid UTF-8 in " + std::string(fault->in_key ? "a key of " : "") +
                          "`" + fault->path + "`" + at, fault->path);
  }
  nlohmann::json parsed;
  try {
    parsed = nlohmann::json::parse(body.begin(), body.end());
  } catch (const nlohmann::json::exception& e) {
    // "[json.exception.parse_error.101] parse error at line 1, column 5: ..." -> from "parse".
    std::string what = e.what();
    const size_t bracket = what.find("] ");
    if (what.rfind("[json.exception.", 0) == 0 && bracket != std::string::npos) {
      what = what.substr(bracket + 2);
    }
    if (what.size() > kMaxQuoted) what = what.substr(0, kMaxQuoted) + "...";
    return BadRequest("Invalid JSON in the request body: " + what);
  }
  if (!parsed.is_object()) {
    return BadRequest("The request body must be a JSON object, got " + JsonTypePhrase(parsed));
  }
  return parsed;
}

MaybeError CheckModel(const FieldReader& body, const std::string& served_name) {
  std::optional<std::string> model;
  if (MaybeError e = body.String("model", &model)) return e;
  if (model.has_value() && !model->empty() && *model != served_name) return ModelNotFound(*model);
  return std::nullopt;
}

const nlohmann::json* FieldReader::Find(std::string_view key) const {
  if (!object_.is_object()) return nullptr;
  const auto it = object_.find(key);
  if (it == object_.end() || it->is_null()) return nullptr;
  return &*it;
}

ApiError FieldReader::TypeError(std::string_view key, std::string_view expected,
                                const nlohmann::json& got) const {
  return BadRequest(Param(key) + " must be " + std::string(expected) + ", got " +
                        JsonTypePhrase(got),
                    Param(key));
}

MaybeError FieldReader::Bool(std::string_view key, bool* out) const {
  const nlohmann::json* v = Find(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_boolean()) return TypeError(key, "a boolean", *v);
  *out = v->get<bool>();
  return std::nullopt;
}

MaybeError FieldReader::Number(std::string_view key, std::optional<double>* out) const {
  const nlohmann::json* v = Find(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number()) return TypeError(key, "a number", *v);
  *out = v->get<double>();
  return std::nullopt;
}

MaybeError FieldReader::Int(std::string_view key, std::optional<int64_t>* out) const {
  const nlohmann::json* v = Find(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number()) return TypeError(key, "an integer", *v);
  const std::optional<int64_t> i = AsInt64(*v);
  if (!i.has_value()) {
    return BadRequest(Param(key) + " must be an integer in the 64-bit signed range, got " +
                          DescribeJsonValue(*v),
                      Param(key));
  }
  *out = *i;
  return std::nullopt;
}

MaybeError FieldReader::String(std::string_view key, std::optional<std::string>* out) const {
  const nlohmann::json* v = Find(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_string()) return TypeError(key, "a string", *v);
  *out = v->get<std::string>();
  return std::nullopt;
}

MaybeError FieldReader::Object(std::string_view key, const nlohmann::json** out) const {
  *out = nullptr;
  const nlohmann::json* v = Find(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_object()) return TypeError(key, "an object", *v);
  *out = v;
  return std::nullopt;
}

MaybeError FieldReader::Array(std::string_view key, const nlohmann::json** out) const {
  *out = nullptr;
  const nlohmann::json* v = Find(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_array()) return TypeError(key, "an array", *v);
  *out = v;
  return std::nullopt;
}

}  // namespace g4::openai
