// /tokenize and /detokenize parsing: see tokenize_request.h.
#include "server/openai/tokenize_request.h"

#include <limits>
#include <optional>

#include "server/openai/field_reader.h"
#include "server/openai/messages.h"

namespace g4::openai {
namespace {

using json = nlohmann::json;

ApiResult<TokenizeRequest> ParseTokenize(std::string_view body, const ServerDefaults& defaults) {
  ApiResult<json> parsed = ParseJsonObject(body);
  if (!parsed.ok()) return parsed.error();
  const FieldReader r(parsed.value());
  if (MaybeError e = CheckModel(r, defaults.model_name)) return *e;
  TokenizeRequest out;
  if (r.Has("messages")) {
    if (MaybeError e = ValidateMessages(r.Find("messages"))) return *e;
    out.is_chat = true;
    out.messages = *r.Find("messages");
    out.add_special_tokens = false;
    if (MaybeError e = r.Bool("add_generation_prompt", &out.add_generation_prompt)) return *e;
    const json* kwargs = nullptr;
    if (MaybeError e = r.Object("chat_template_kwargs", &kwargs)) return *e;
    if (kwargs != nullptr) {
      const FieldReader k(*kwargs, "chat_template_kwargs.");
      if (MaybeError e = k.Bool("enable_thinking", &out.enable_thinking)) return *e;
    }
  } else {
    const std::string_view key = r.Has("prompt") ? "prompt" : "content";
    std::optional<std::string> prompt;
    if (MaybeError e = r.String(key, &prompt)) return *e;
    if (!prompt.has_value()) return BadRequest("prompt or messages is required", "prompt");
    out.prompt = *prompt;
  }
  if (MaybeError e = r.Bool("add_special_tokens", &out.add_special_tokens)) return *e;
  if (MaybeError e = r.Bool("return_token_strs", &out.return_token_strs)) return *e;
  return out;
}

ApiResult<DetokenizeRequest> ParseDetokenize(std::string_view body,
                                             const ServerDefaults& defaults) {
  ApiResult<json> parsed = ParseJsonObject(body);
  if (!parsed.ok()) return parsed.error();
  const FieldReader r(parsed.value());
  if (MaybeError e = CheckModel(r, defaults.model_name)) return *e;
  const json* tokens = nullptr;
  if (MaybeError e = r.Array("tokens", &tokens)) return *e;
  if (tokens == nullptr) return BadRequest("tokens is required", "tokens");
  DetokenizeRequest out;
  out.tokens.reserve(tokens->size());
  for (const json& t : *tokens) {
    const std::optional<int64_t> id = AsInt64(t);
    if (!id.has_value() || *id < 0 || *id > std::numeric_limits<int32_t>::max()) {
      return BadRequest("tokens must be an array of non-negative token ids, got " +
                            DescribeJsonValue(t),
                        "tokens");
    }
    out.tokens.push_back(static_cast<int32_t>(*id));
  }
  return out;
}

}  // namespace

ApiResult<TokenizeRequest> ParseTokenizeRequest(std::string_view body,
                                                const ServerDefaults& defaults) {
  try {
    return ParseTokenize(body, defaults);
  } catch (...) {
    return Internal("tokenize request parser failed");
  }
}

ApiResult<DetokenizeRequest> ParseDetokenizeRequest(std::string_view body,
                                                    const ServerDefaults& defaults) {
  try {
    return ParseDetokenize(body, defaults);
  } catch (...) {
    return Internal("detokenize request parser failed");
  }
}

}  // namespace g4::openai
