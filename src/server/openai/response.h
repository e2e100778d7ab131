// Response bodies and SSE events of the OpenAI surface, as nlohmann::ordered_json so keys come
// out in vLLM's order (id, object, created, model, choices, system_fingerprint, usage), per
// server-api.md §2-§5 and §9. Every builder is pure: ids and timestamps come in through
// ResponseMeta, so tests can compare whole bodies.
//
// Every response also carries g4's degeneracy verdict as an extra top-level field,
// "g4": {"degenerate": bool, "reason"?: str, "start"?: int} (streams: on the finishing chunk
// of each choice). With n > 1 choices, a whole body's "g4" is the first degenerate choice's
// verdict (else choice 0's) plus "choices": [the verdict of each choice, by index].
//
// Text may hold invalid UTF-8 (a token boundary inside a character); Dump() and SseEvent()
// serialise with error_handler_t::replace, so it becomes U+FFFD instead of an exception.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/sampling/degeneracy.h"

namespace g4::openai {

using ojson = nlohmann::ordered_json;

// What every body or chunk of one response shares; identical across the chunks of a stream.
struct ResponseMeta {
  std::string id;                  // NewRequestId("chatcmpl-") / NewRequestId("cmpl-")
  int64_t created = 0;             // unix seconds
  std::string model;
  std::string system_fingerprint;  // empty: omitted
};

struct TopLogprob {
  std::string token;
  float logprob = 0;
};

// One generated token's log-probability and the best alternatives at its position.
struct TokenLogprob {
  std::string token;  // its text (raw bytes; may be an incomplete UTF-8 sequence)
  float logprob = 0;
  std::vector<TopLogprob> top;
};

// One tool call of an answer: {"id", "type": "function", "function": {"name", "arguments"}}.
struct ToolCall {
  std::string id;         // "call_" + random hex (NewRequestId)
  std::string name;
  std::string arguments;  // a JSON object as a string, as OpenAI sends it
};

// One streamed piece of a tool call: the first delta of call `index` carries id, type and name
// (and arguments ""); later deltas carry argument fragments only.
struct ToolCallDelta {
  int index = 0;
  std::optional<std::string> id;    // with the name: the call's first delta
  std::optional<std::string> name;
  std::string arguments;
};

// One finished choice of a non-streaming response.
struct Choice {
  int index = 0;                         // 0..n-1
  std::string text;                      // chat: message.content; completions: text
  std::optional<std::string> reasoning;  // chat: "reasoning_content" and "reasoning"
  std::vector<ToolCall> tool_calls;      // chat: message.tool_calls (content null if empty)
  std::string finish_reason = "stop";    // "stop", "length" or "tool_calls"
  ojson stop_reason = nullptr;           // vLLM ext: the matched stop string or token id
  std::optional<std::vector<TokenLogprob>> logprobs;
  int64_t text_offset = 0;  // completions logprobs: text offset of the first token
};

// One chunk of a stream.
struct Chunk {
  int index = 0;                         // the choice it belongs to: 0..n-1
  bool role = false;                     // chat: the first chunk says role "assistant"
  std::optional<std::string> text;       // chat: delta.content; completions: text ("" if unset)
  std::optional<std::string> reasoning;  // chat: delta.reasoning_content and delta.reasoning
  std::vector<ToolCallDelta> tool_calls; // chat: delta.tool_calls (omitted when empty)
  std::optional<std::string> finish_reason;  // set on the last chunk of the choice
  ojson stop_reason = nullptr;               // written with finish_reason
  std::optional<std::vector<TokenLogprob>> logprobs;
  int64_t text_offset = 0;                   // completions logprobs
  std::optional<DegeneracyVerdict> verdict;  // the finishing chunk carries the verdict
  bool usage_null = false;  // stream_options.include_usage: "usage": null until the usage chunk
};

// {"prompt_tokens", "total_tokens", "completion_tokens", "prompt_tokens_details":
// {"cached_tokens"}} (vLLM's UsageInfo order; cached_tokens: of the prompt, already in a kept
// KV cache).
ojson Usage(int64_t prompt_tokens, int64_t completion_tokens, int64_t cached_tokens = 0);

// {"degenerate": false} or {"degenerate": true, "reason": ..., "start": ...}.
ojson DegeneracyJson(const DegeneracyVerdict& verdict);
// One verdict: DegeneracyJson. Several (n > 1): the first degenerate one's (else the first's)
// plus "choices": each one's, in order.
ojson DegeneracyJson(const std::vector<DegeneracyVerdict>& verdicts);

// Chat logprobs: {"content": [{"token", "logprob", "bytes", "top_logprobs": [...]}]}.
ojson ChatLogprobs(const std::vector<TokenLogprob>& tokens);
// Completions logprobs: {"text_offset", "token_logprobs", "tokens", "top_logprobs"}.
ojson CompletionLogprobs(const std::vector<TokenLogprob>& tokens, int64_t text_offset);

// object "chat.completion". The vector forms take n choices and their verdicts (same order).
ojson ChatCompletion(const ResponseMeta& meta, const Choice& choice, const ojson& usage,
                     const DegeneracyVerdict& verdict);
ojson ChatCompletion(const ResponseMeta& meta, const std::vector<Choice>& choices,
                     const ojson& usage, const std::vector<DegeneracyVerdict>& verdicts);
// object "chat.completion.chunk".
ojson ChatChunk(const ResponseMeta& meta, const Chunk& chunk);
// object "text_completion".
ojson TextCompletion(const ResponseMeta& meta, const Choice& choice, const ojson& usage,
                     const DegeneracyVerdict& verdict);
ojson TextCompletion(const ResponseMeta& meta, const std::vector<Choice>& choices,
                     const ojson& usage, const std::vector<DegeneracyVerdict>& verdicts);
// object "text_completion" (vLLM reuses it for stream chunks).
ojson TextChunk(const ResponseMeta& meta, const Chunk& chunk);
// The include_usage chunk: "choices": [] and the full usage. `object` is
// "chat.completion.chunk" or "text_completion".
ojson UsageChunk(const ResponseMeta& meta, std::string_view object, const ojson& usage);

// GET /v1/models: one model card with vLLM's fields (owned_by "g4"); root defaults to name.
ojson ModelsList(const std::string& name, int64_t created, int64_t max_model_len,
                 const std::string& root = "");
// POST /tokenize: {"count", "max_model_len", "tokens", "token_strs"} (null when not asked).
ojson TokenizeResponse(const std::vector<int32_t>& tokens, int64_t max_model_len,
                       const std::optional<std::vector<std::string>>& token_strs);
// POST /detokenize: {"prompt"}.
ojson DetokenizeResponse(const std::string& prompt);

// One line of JSON, invalid UTF-8 replaced by U+FFFD; never throws.
std::string Dump(const ojson& body);
// "data: <one-line JSON>\n\n".
std::string SseEvent(const ojson& body);
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";
// An SSE comment (": ping\n\n"): ignored by clients, keeps proxies and dead-peer checks busy.
inline constexpr std::string_view kSsePing = ": ping\n\n";

// prefix + 32 random hex digits (vLLM: "chatcmpl-" + uuid4().hex). Thread-safe.
std::string NewRequestId(std::string_view prefix);
// The current time in unix seconds, for ResponseMeta::created.
int64_t UnixNow();

}  // namespace g4::openai
