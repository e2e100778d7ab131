// ApiError builders and serialisation: see api_error.h for the shape (vLLM's, server-api.md §7).
#include "server/openai/api_error.h"

#include <string>
#include <utility>

#include "tokenizer/utf8.h"

namespace g4::openai {

const char* ErrorTypeForStatus(int status) {
  // The openai-python exception classes, which vLLM reuses as `type`.
  switch (status) {
    case 400: return "BadRequestError";
    case 401: return "AuthenticationError";
    case 403: return "PermissionDeniedError";
    case 404: return "NotFoundError";
    case 405: return "MethodNotAllowedError";
    case 409: return "ConflictError";
    case 413: return "RequestEntityTooLargeError";
    case 422: return "UnprocessableEntityError";
    case 429: return "RateLimitError";
    case 501: return "NotImplementedError";
    case 503: return "ServiceUnavailableError";
    default: return status >= 500 ? "InternalServerError" : "BadRequestError";
  }
}

ApiError MakeError(int status, std::string message, std::string param) {
  return ApiError{status, std::move(message), ErrorTypeForStatus(status), std::move(param), ""};
}

ApiError BadRequest(std::string message, std::string param) {
  return MakeError(400, std::move(message), std::move(param));
}

ApiError Unauthorized() { return MakeError(401, "Invalid API key."); }

ApiError NotFound(std::string message, std::string param) {
  return MakeError(404, std::move(message), std::move(param));
}

ApiError ModelNotFound(const std::string& model) {
  return NotFound("The model `" + model + "` does not exist.", "model");
}

ApiError PayloadTooLarge(size_t limit_bytes) {
  return MakeError(413, "Request body is too large: the limit is " + std::to_string(limit_bytes) +
                            " bytes.");
}

ApiError Unavailable(std::string message) { return MakeError(503, std::move(message)); }

ApiError Internal(std::string message) { return MakeError(500, std::move(message)); }

ApiError ContextLengthExceeded(int64_t max_model_len, int64_t prompt_tokens,
                               std::optional<int64_t> max_tokens, std::string param) {
  std::string message = "This model's maximum context length is " + std::to_string(max_model_len) +
                        " tokens. However, you requested ";
  if (max_tokens.has_value()) {
    message += std::to_string(prompt_tokens + *max_tokens) + " tokens (" +
               std::to_string(prompt_tokens) + " in the messages, " +
               std::to_string(*max_tokens) +
               " in the completion). Please reduce the length of the messages or completion.";
  } else {
    message += std::to_string(prompt_tokens) +
               " tokens in the messages, Please reduce the length of the messages.";
  }
  return BadRequest(std::move(message), std::move(param));
}

ApiError FromStatus(const Status& status, std::string param) {
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kUnimplemented:
    case StatusCode::kFailedPrecondition:  // e.g. chat messages for a model with no template
      return BadRequest(status.message(), std::move(param));
    case StatusCode::kNotFound:
      return NotFound(status.message(), std::move(param));
    default:
      return Internal(status.message());
  }
}

nlohmann::ordered_json ToJson(const ApiError& error) {
  nlohmann::ordered_json body;
  body["message"] = utf8::Sanitize(error.message);
  body["type"] = utf8::Sanitize(error.type);
  body["param"] = error.param.empty() ? nlohmann::ordered_json(nullptr)
                                      : nlohmann::ordered_json(utf8::Sanitize(error.param));
  if (error.code_override.empty()) {
    body["code"] = error.status;
  } else {
    body["code"] = utf8::Sanitize(error.code_override);
  }
  nlohmann::ordered_json out;
  out["error"] = std::move(body);
  return out;
}

std::string ToJsonString(const ApiError& error) {
  return ToJson(error).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace g4::openai
