// Parsing and validation of /v1/chat/completions and /v1/completions bodies into an
// engine-agnostic ParsedRequest, following the field tables of server-api.md §2-§3 (vLLM's
// semantics; OpenAI's ranges). Every client mistake is a 400 (404 for an unknown model) whose
// `param` names the field; nothing here throws or returns a 5xx for any input.
//
// Policy:
//   - Fields g4 does not support yet (suffix, best_of > 1, vLLM's guided_*
//     fields, legacy `functions`, ...) are a 400 naming the field: a client must never get an
//     answer that silently ignored what it asked. Tools and response_format are read by
//     output_constraints.h, whose JSON Schema compiler refuses what it cannot enforce.
//   - Fields that carry no meaning for g4 (user, metadata, store, service_tier, unknown keys)
//     are accepted and ignored, as vLLM does.
//   - Sampling fields absent from the request take the server's defaults (the checkpoint's
//     generation_config.json, as vLLM does), then SamplingParams' own.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/sampling/sampler.h"
#include "server/openai/api_error.h"
#include "server/openai/output_constraints.h"

namespace g4::openai {

struct ServerDefaults {
  std::string model_name;   // the served name: requests may name it or leave `model` out
  int max_model_len = 0;    // context size in tokens
  SamplingParams sampling;  // generation_config.json's values (Gemma: T 1, top_k 64, top_p 0.95)
  std::vector<int32_t> stop_token_ids;  // the checkpoint's end-of-turn / eos ids
  bool stop_on_degenerate = false;      // g4 serve --stop-on-degenerate
};

struct ParsedRequest {
  enum class Kind { kChat, kCompletion };
  Kind kind = Kind::kChat;
  std::string model;  // always the served name

  // Chat: the validated messages, for RenderChat (chat/chat.h).
  nlohmann::json messages = nlohmann::json::array();
  // chat_template_kwargs.enable_thinking, else reasoning_effort != "none"; off by default as
  // in the Gemma 4 template.
  bool enable_thinking = false;
  bool add_generation_prompt = true;  // ext (vLLM), passed to ChatOptions
  bool include_reasoning = true;      // ext (vLLM): false drops the reasoning from the answer

  // tools, tool_choice, parallel_tool_calls (chat) and response_format (both endpoints).
  OutputConstraints constraints;

  // Completions: one prompt, as text or as token ids (which the caller must check against the
  // vocabulary: ValidatePromptIds).
  std::string prompt_text;
  std::vector<int32_t> prompt_ids;
  bool prompt_is_ids = false;
  bool echo = false;

  // max_completion_tokens wins over max_tokens. Completions default to 16 (OpenAI legacy,
  // vLLM); chat defaults to none = fill the context (ResolveMaxTokens).
  std::optional<int> max_tokens;
  SamplingParams sampling;  // validated; top_k -1 is stored as 0 (off)
  std::vector<std::string> stop;         // non-empty strings
  std::vector<int32_t> stop_token_ids;   // the server's defaults, then the request's (ext)
  bool ignore_eos = false;               // ext
  bool skip_special_tokens = true;       // ext
  // ext (g4): end a choice when the degeneracy (token-loop) check trips; the server's default.
  bool stop_on_degenerate = false;
  int n = 1;  // choices, each sampled independently: [1, 16]

  bool stream = false;
  // stream_options.include_usage; true once stream_options is given (vLLM's default).
  bool include_usage = false;

  bool logprobs = false;  // chat: `logprobs`; completions: `logprobs` is set (an integer)
  int top_logprobs = 0;   // chat: `top_logprobs`; completions: the value of `logprobs`
};

using ParseResult = ApiResult<ParsedRequest>;

ParseResult ParseChatRequest(std::string_view body, const ServerDefaults& defaults);
ParseResult ParseCompletionRequest(std::string_view body, const ServerDefaults& defaults);

// The most tokens the request may generate once its prompt is tokenized: its max_tokens, or
// without one the rest of the context. A 400 with vLLM's context-length message when the
// prompt plus max_tokens does not fit, or when the prompt alone leaves no room.
ApiResult<int> ResolveMaxTokens(const ParsedRequest& request, int64_t prompt_tokens,
                                int64_t max_model_len);

// A 400 naming `logit_bias` when one of its token ids is outside [0, vocab_size).
std::optional<ApiError> ValidateLogitBias(const ParsedRequest& request, int64_t vocab_size);

// A 400 naming `prompt` when an id of a token-id prompt is outside [0, vocab_size).
std::optional<ApiError> ValidatePromptIds(const ParsedRequest& request, int64_t vocab_size);

}  // namespace g4::openai
