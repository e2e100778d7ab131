// Parsing of POST /tokenize and POST /detokenize bodies (server-api.md §1 and §9, vLLM's
// shapes; llama.cpp's "content" accepted as a spelling of "prompt"). Same rules as request.h:
// a 400 naming the field for any client mistake, a 404 for an unknown model, never a throw.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/openai/api_error.h"
#include "server/openai/request.h"

namespace g4::openai {

struct TokenizeRequest {
  bool is_chat = false;  // {"messages": ...} rather than {"prompt": ...}
  std::string prompt;
  nlohmann::json messages = nlohmann::json::array();  // validated as for chat completions
  bool add_generation_prompt = true;  // chat form
  bool enable_thinking = false;       // chat form: chat_template_kwargs.enable_thinking
  // vLLM's defaults: true for a prompt (it gets <bos>), false for messages (the rendered
  // template already starts with <bos>).
  bool add_special_tokens = true;
  bool return_token_strs = false;
};

struct DetokenizeRequest {
  std::vector<int32_t> tokens;  // non-negative; the caller checks them against the vocabulary
};

ApiResult<TokenizeRequest> ParseTokenizeRequest(std::string_view body,
                                                const ServerDefaults& defaults);
ApiResult<DetokenizeRequest> ParseDetokenizeRequest(std::string_view body,
                                                    const ServerDefaults& defaults);

}  // namespace g4::openai
