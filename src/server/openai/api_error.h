// ApiError: an HTTP error answer in the OpenAI shape, {"error": {"message", "type", "param",
// "code"}}, spelled the way vLLM spells it today (server-api.md §7): `type` is the name of the
// exception class the openai clients raise for the status ("BadRequestError", ...), `code` is
// the HTTP status as an integer, `param` names the offending request field or is null.
//
// Client errors must be 4xx: the official clients retry every 5xx, so a malformed request
// answered with a 500 would be sent three times.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace g4::openai {

struct ApiError {
  int status = 500;
  std::string message;
  std::string type;            // "BadRequestError", "NotFoundError", ...
  std::string param;           // the request field at fault; empty = null
  std::string code_override;   // a string code instead of the integer status; empty = status
};

// The vLLM/openai-python type name for an HTTP status ("BadRequestError" for 400, ...).
const char* ErrorTypeForStatus(int status);

ApiError MakeError(int status, std::string message, std::string param = "");
ApiError BadRequest(std::string message, std::string param = "");           // 400
ApiError Unauthorized();                                                   // 401
ApiError NotFound(std::string message, std::string param = "");            // 404
ApiError ModelNotFound(const std::string& model);  // 404 "The model `X` does not exist."
ApiError PayloadTooLarge(size_t limit_bytes);                              // 413
ApiError Unavailable(std::string message);                                 // 503
ApiError Internal(std::string message);                                    // 500

// vLLM's context-length message (clients match "maximum context length"). With max_tokens:
//   "This model's maximum context length is L tokens. However, you requested P+M tokens (P in
//    the messages, M in the completion). Please reduce the length of the messages or
//    completion."
// without (the prompt alone leaves no room): "... However, you requested P tokens in the
// messages, Please reduce the length of the messages." (vLLM's punctuation, kept for parity).
ApiError ContextLengthExceeded(int64_t max_model_len, int64_t prompt_tokens,
                               std::optional<int64_t> max_tokens, std::string param);

// A library Status as an API error: InvalidArgument and Unimplemented -> 400 (the input asked
// for something g4 cannot do), NotFound -> 404, anything else -> 500.
ApiError FromStatus(const Status& status, std::string param = "");

// {"error": {"message", "type", "param", "code"}}. Strings are made valid UTF-8 first, so the
// result can be dumped with any error handler.
nlohmann::ordered_json ToJson(const ApiError& error);
// ToJson(error) dumped on one line.
std::string ToJsonString(const ApiError& error);

// The result of parsing a request: a value or the ApiError that explains why there is none.
template <typename T>
class [[nodiscard]] ApiResult {
 public:
  ApiResult(T value) : value_(std::move(value)) {}      // NOLINT: implicit by design
  ApiResult(ApiError error) : error_(std::move(error)) {}  // NOLINT: implicit by design

  bool ok() const { return value_.has_value(); }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  const ApiError& error() const { return error_; }

 private:
  std::optional<T> value_;
  ApiError error_;
};

}  // namespace g4::openai
