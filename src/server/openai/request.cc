// Request parsing: see request.h for the policy; the field rules are server-api.md §2-§3.
#include "server/openai/request.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <unordered_set>
#include <utility>

#include "server/openai/field_reader.h"
#include "server/openai/messages.h"

namespace g4::openai {
namespace {

using json = nlohmann::json;

// Returns from the enclosing function with the error when `expr` yields one.
#define G4_API_RETURN_IF_ERROR(expr)                   \
  do {                                                 \
    if (::g4::openai::MaybeError g4_api_e_ = (expr)) { \
      return *std::move(g4_api_e_);                    \
    }                                                  \
  } while (0)

constexpr int kMaxTopLogprobs = 20;      // vLLM's default max_logprobs
constexpr int kCompletionDefaultMaxTokens = 16;
constexpr int kMaxChoices = 16;          // `n`: each choice is a sequence of its own
constexpr double kMaxLogitBias = 100;    // OpenAI's range: [-100, 100]

// Fields a client may send that g4 cannot honour yet: a 400 naming the field whenever the value
// asks for something (see IsSet). Both endpoints.
constexpr std::array<std::string_view, 22> kUnsupportedFields = {
    // Structured output (vLLM's guided_* and structured_outputs, llama.cpp's grammar).
    "guided_json", "guided_regex", "guided_choice", "guided_grammar", "guided_json_object",
    "structured_outputs", "structural_tag", "grammar", "json_schema",
    // Sampling and output controls g4's engine does not implement.
    "logits_processors", "prompt_logprobs", "min_tokens", "include_stop_str_in_output",
    "truncate_prompt_tokens", "bad_words", "allowed_token_ids", "use_beam_search",
    "prompt_embeds", "return_tokens_as_token_ids",
    // OpenAI features outside a text model server.
    "audio", "prediction", "web_search_options"};
// The same, for fields only the chat endpoint defines.
constexpr std::array<std::string_view, 5> kUnsupportedChatFields = {
    "continue_final_message", "chat_template", "documents", "functions", "echo"};

// Whether a value asks for something: null, false, 0, "" and empty containers do not.
bool IsSet(const json& value) {
  switch (value.type()) {
    case json::value_t::null: return false;
    case json::value_t::boolean: return value.get<bool>();
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float: return value.get<double>() != 0.0;
    case json::value_t::string: return !value.get_ref<const std::string&>().empty();
    case json::value_t::array:
    case json::value_t::object: return !value.empty();
    default: return true;
  }
}

std::string FormatNumber(double value) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", value);
  return buf;
}

ApiError RangeError(const std::string& param, const std::string& range, double got) {
  return BadRequest(param + " must be " + range + ", got " + FormatNumber(got), param);
}

ApiError NotSupported(const std::string& param) {
  return BadRequest(param + " is not supported yet", param);
}

MaybeError CheckUnsupported(const json& body, bool chat) {
  const FieldReader r(body);
  for (std::string_view key : kUnsupportedFields) {
    if (const json* v = r.Find(key); v != nullptr && IsSet(*v)) return NotSupported(r.Param(key));
  }
  if (chat) {
    for (std::string_view key : kUnsupportedChatFields) {
      if (const json* v = r.Find(key); v != nullptr && IsSet(*v)) {
        return NotSupported(r.Param(key));
      }
    }
  }
  return std::nullopt;
}

// Reads a float field into *out, checking [lo, hi] (lo excluded when lo_open).
MaybeError ReadRanged(const FieldReader& r, std::string_view key, double lo, double hi,
                      bool lo_open, const std::string& range, float* out) {
  std::optional<double> v;
  G4_API_RETURN_IF_ERROR(r.Number(key, &v));
  if (!v.has_value()) return std::nullopt;
  if ((lo_open ? !(*v > lo) : !(*v >= lo)) || !(*v <= hi)) {
    return RangeError(r.Param(key), range, *v);
  }
  *out = static_cast<float>(*v);
  return std::nullopt;
}

// logit_bias: {"<token id>": bias in [-100, 100]}; the ids' vocabulary bound is checked once
// the model is known (ValidateLogitBias).
MaybeError ReadLogitBias(const FieldReader& r, std::vector<std::pair<int32_t, float>>* out) {
  const json* bias = nullptr;
  G4_API_RETURN_IF_ERROR(r.Object("logit_bias", &bias));
  if (bias == nullptr) return std::nullopt;
  out->clear();
  out->reserve(bias->size());
  for (const auto& [key, value] : bias->items()) {
    const auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
    const bool digits =
        !key.empty() && key.size() <= 10 && std::all_of(key.begin(), key.end(), is_digit);
    const int64_t id = digits ? std::stoll(key) : -1;
    if (id < 0 || id > std::numeric_limits<int32_t>::max()) {
      return BadRequest("logit_bias keys must be token ids (non-negative integers as strings), "
                        "got \"" + key.substr(0, 40) + "\"",
                        "logit_bias");
    }
    if (!value.is_number()) {
      return BadRequest("logit_bias[\"" + key + "\"] must be a number, got " +
                            JsonTypePhrase(value),
                        "logit_bias");
    }
    const double v = value.get<double>();
    if (!(v >= -kMaxLogitBias && v <= kMaxLogitBias)) {
      return RangeError("logit_bias", "in [-100, 100] for every token", v);
    }
    out->emplace_back(static_cast<int32_t>(id), static_cast<float>(v));
  }
  return std::nullopt;
}

MaybeError ReadSampling(const FieldReader& r, const ServerDefaults& defaults,
                        SamplingParams* out) {
  SamplingParams s = defaults.sampling;
  // OpenAI's range; vLLM only asks for >= 0, but nothing above 2 is a sensible request.
  G4_API_RETURN_IF_ERROR(ReadRanged(r, "temperature", 0, 2, false, "in [0, 2]", &s.temperature));
  G4_API_RETURN_IF_ERROR(ReadRanged(r, "top_p", 0, 1, true, "in (0, 1]", &s.top_p));
  G4_API_RETURN_IF_ERROR(ReadRanged(r, "min_p", 0, 1, false, "in [0, 1]", &s.min_p));
  G4_API_RETURN_IF_ERROR(ReadRanged(r, "presence_penalty", -2, 2, false, "in [-2, 2]",
                                    &s.presence_penalty));
  G4_API_RETURN_IF_ERROR(ReadRanged(r, "frequency_penalty", -2, 2, false, "in [-2, 2]",
                                    &s.frequency_penalty));
  // vLLM's spelling wins over llama.cpp's when both are sent.
  for (std::string_view key : {"repeat_penalty", "repetition_penalty"}) {
    std::optional<double> v;
    G4_API_RETURN_IF_ERROR(r.Number(key, &v));
    if (!v.has_value()) continue;
    if (!(*v > 0) || !std::isfinite(static_cast<float>(*v))) {
      return RangeError(r.Param(key), "greater than 0 (1 disables it)", *v);
    }
    s.repetition_penalty = static_cast<float>(*v);
  }
  std::optional<int64_t> top_k;
  G4_API_RETURN_IF_ERROR(r.Int("top_k", &top_k));
  if (top_k.has_value()) {
    if (*top_k < -1) {
      return RangeError("top_k", "-1 or 0 (disabled), or at least 1", static_cast<double>(*top_k));
    }
    // Anything past the vocabulary keeps every token; clamp so it fits an int.
    s.top_k = *top_k <= 0 ? 0
                          : static_cast<int>(std::min<int64_t>(*top_k,
                                                               std::numeric_limits<int>::max()));
  }
  G4_API_RETURN_IF_ERROR(ReadLogitBias(r, &s.logit_bias));
  std::optional<int64_t> seed;
  G4_API_RETURN_IF_ERROR(r.Int("seed", &seed));
  s.seed.reset();  // a server-wide default seed would make every request identical
  if (seed.has_value()) s.seed = static_cast<uint64_t>(*seed);
  // The sampler's own check, in case it knows a rule this parser does not.
  if (Status st = s.Validate(); !st.ok()) {
    std::string message = st.message();
    const std::string prefix = "SamplingParams.";
    if (message.rfind(prefix, 0) == 0) message = message.substr(prefix.size());
    return BadRequest(message, message.substr(0, message.find(' ')));
  }
  *out = s;
  return std::nullopt;
}

MaybeError ReadMaxTokens(const FieldReader& r, std::optional<int>* out) {
  std::optional<int64_t> max_tokens, max_completion_tokens;
  G4_API_RETURN_IF_ERROR(r.Int("max_tokens", &max_tokens));
  G4_API_RETURN_IF_ERROR(r.Int("max_completion_tokens", &max_completion_tokens));
  const bool completion = max_completion_tokens.has_value();
  const std::optional<int64_t> chosen = completion ? max_completion_tokens : max_tokens;
  if (!chosen.has_value()) return std::nullopt;
  const std::string param = completion ? "max_completion_tokens" : "max_tokens";
  if (*chosen < 1) return RangeError(param, "at least 1", static_cast<double>(*chosen));
  if (*chosen > std::numeric_limits<int>::max()) {
    return RangeError(param, "at most " + std::to_string(std::numeric_limits<int>::max()),
                      static_cast<double>(*chosen));
  }
  *out = static_cast<int>(*chosen);
  return std::nullopt;
}

MaybeError ReadStop(const FieldReader& r, std::vector<std::string>* out) {
  const json* stop = r.Find("stop");
  if (stop == nullptr) return std::nullopt;
  const auto add = [out](const std::string& s) {
    if (!s.empty()) out->push_back(s);  // an empty stop string would end every generation at once
  };
  if (stop->is_string()) {
    add(stop->get_ref<const std::string&>());
    return std::nullopt;
  }
  if (!stop->is_array()) return r.TypeError("stop", "a string or an array of strings", *stop);
  for (const json& s : *stop) {
    if (!s.is_string()) {
      return BadRequest("stop must be a string or an array of strings, got an element that is " +
                            JsonTypePhrase(s),
                        "stop");
    }
    add(s.get_ref<const std::string&>());
  }
  return std::nullopt;
}

// A token id in [0, 2^31): what an int32 id can be; the vocabulary bound is checked later.
std::optional<int32_t> AsTokenId(const json& value) {
  const std::optional<int64_t> id = AsInt64(value);
  if (!id.has_value() || *id < 0 || *id > std::numeric_limits<int32_t>::max()) {
    return std::nullopt;
  }
  return static_cast<int32_t>(*id);
}

MaybeError ReadStopTokenIds(const FieldReader& r, const ServerDefaults& defaults,
                            std::vector<int32_t>* out) {
  *out = defaults.stop_token_ids;
  const json* ids = nullptr;
  G4_API_RETURN_IF_ERROR(r.Array("stop_token_ids", &ids));
  if (ids == nullptr) return std::nullopt;
  // A set, not a scan of *out: a body may list a million ids.
  std::unordered_set<int32_t> seen(out->begin(), out->end());
  for (const json& v : *ids) {
    const std::optional<int32_t> id = AsTokenId(v);
    if (!id.has_value()) {
      return BadRequest("stop_token_ids must be an array of non-negative token ids, got " +
                            DescribeJsonValue(v),
                        "stop_token_ids");
    }
    if (seen.insert(*id).second) out->push_back(*id);
  }
  return std::nullopt;
}

MaybeError ReadStreaming(const FieldReader& r, ParsedRequest* out) {
  G4_API_RETURN_IF_ERROR(r.Bool("stream", &out->stream));
  const json* options = nullptr;
  G4_API_RETURN_IF_ERROR(r.Object("stream_options", &options));
  if (options == nullptr) return std::nullopt;
  if (!out->stream) {
    return BadRequest("Stream options can only be defined when `stream=True`.", "stream_options");
  }
  const FieldReader o(*options, "stream_options.");
  out->include_usage = true;  // vLLM's default once the object is present
  G4_API_RETURN_IF_ERROR(o.Bool("include_usage", &out->include_usage));
  bool continuous = false;
  G4_API_RETURN_IF_ERROR(o.Bool("continuous_usage_stats", &continuous));
  if (continuous) return NotSupported(o.Param("continuous_usage_stats"));
  return std::nullopt;
}

MaybeError ReadLogprobRange(const std::string& param, int64_t value, int* out) {
  if (value < 0 || value > kMaxTopLogprobs) {
    return RangeError(param, "in [0, " + std::to_string(kMaxTopLogprobs) + "]",
                      static_cast<double>(value));
  }
  *out = static_cast<int>(value);
  return std::nullopt;
}

// What both endpoints share, after the endpoint-specific unsupported-field checks.
MaybeError ReadCommon(const json& body, const ServerDefaults& defaults, ParsedRequest* out) {
  const FieldReader r(body);
  G4_API_RETURN_IF_ERROR(ReadSampling(r, defaults, &out->sampling));
  G4_API_RETURN_IF_ERROR(ReadMaxTokens(r, &out->max_tokens));
  G4_API_RETURN_IF_ERROR(ReadStop(r, &out->stop));
  G4_API_RETURN_IF_ERROR(ReadStopTokenIds(r, defaults, &out->stop_token_ids));
  G4_API_RETURN_IF_ERROR(r.Bool("ignore_eos", &out->ignore_eos));
  G4_API_RETURN_IF_ERROR(r.Bool("skip_special_tokens", &out->skip_special_tokens));
  G4_API_RETURN_IF_ERROR(ReadStreaming(r, out));
  out->stop_on_degenerate = defaults.stop_on_degenerate;
  G4_API_RETURN_IF_ERROR(r.Bool("stop_on_degenerate", &out->stop_on_degenerate));
  std::optional<int64_t> n;
  G4_API_RETURN_IF_ERROR(r.Int("n", &n));
  if (n.has_value()) {
    if (*n < 1 || *n > kMaxChoices) {
      return RangeError("n", "in [1, " + std::to_string(kMaxChoices) + "]",
                        static_cast<double>(*n));
    }
    out->n = static_cast<int>(*n);
  }
  std::optional<int64_t> best_of;
  G4_API_RETURN_IF_ERROR(r.Int("best_of", &best_of));
  if (best_of.has_value() && *best_of < 1) {
    return RangeError("best_of", "at least 1", static_cast<double>(*best_of));
  }
  if (best_of.has_value() && *best_of > 1) {
    return BadRequest("best_of > 1 is not supported yet", "best_of");
  }
  return std::nullopt;
}

MaybeError ReadChatFields(const json& body, ParsedRequest* out) {
  const FieldReader r(body);
  G4_API_RETURN_IF_ERROR(ValidateMessages(r.Find("messages")));

  G4_API_RETURN_IF_ERROR(r.Bool("logprobs", &out->logprobs));
  std::optional<int64_t> top;
  G4_API_RETURN_IF_ERROR(r.Int("top_logprobs", &top));
  if (top.has_value()) {
    G4_API_RETURN_IF_ERROR(ReadLogprobRange("top_logprobs", *top, &out->top_logprobs));
    if (out->top_logprobs > 0 && !out->logprobs) {
      return BadRequest("when using `top_logprobs`, `logprobs` must be set to true.",
                        "top_logprobs");
    }
  }

  // vLLM: reasoning_effort sets enable_thinking unless chat_template_kwargs says otherwise.
  std::optional<std::string> effort;
  G4_API_RETURN_IF_ERROR(r.String("reasoning_effort", &effort));
  if (effort.has_value()) {
    static constexpr std::array<std::string_view, 7> kEfforts = {
        "none", "minimal", "low", "medium", "high", "xhigh", "max"};
    if (std::find(kEfforts.begin(), kEfforts.end(), *effort) == kEfforts.end()) {
      return BadRequest("reasoning_effort must be one of none, minimal, low, medium, high, "
                        "xhigh, max; got \"" + *effort + "\"",
                        "reasoning_effort");
    }
    out->enable_thinking = *effort != "none";
  }
  const json* kwargs = nullptr;
  G4_API_RETURN_IF_ERROR(r.Object("chat_template_kwargs", &kwargs));
  if (kwargs != nullptr) {
    const FieldReader k(*kwargs, "chat_template_kwargs.");
    G4_API_RETURN_IF_ERROR(k.Bool("enable_thinking", &out->enable_thinking));
  }
  G4_API_RETURN_IF_ERROR(r.Bool("include_reasoning", &out->include_reasoning));
  G4_API_RETURN_IF_ERROR(r.Bool("add_generation_prompt", &out->add_generation_prompt));
  return std::nullopt;
}

ApiError BadPrompt(const std::string& message) { return BadRequest(message, "prompt"); }

MaybeError ReadTokenIds(const json& ids, std::vector<int32_t>* out) {
  if (ids.empty()) return BadPrompt("prompt must not be empty");
  out->reserve(ids.size());
  for (const json& v : ids) {
    const std::optional<int32_t> id = AsTokenId(v);
    if (!id.has_value()) {
      return BadPrompt("prompt token ids must be non-negative integers, got " +
                       DescribeJsonValue(v));
    }
    out->push_back(*id);
  }
  return std::nullopt;
}

// prompt: string | [string] | [int] | [[int]]; one prompt only.
MaybeError ReadPrompt(const FieldReader& r, ParsedRequest* out) {
  const json* prompt = r.Find("prompt");
  if (prompt == nullptr) return BadPrompt("prompt is required");
  if (prompt->is_string()) {
    out->prompt_text = prompt->get<std::string>();
    return std::nullopt;
  }
  const std::string shapes =
      "a string, an array of one string, an array of token ids or an array of one token-id array";
  if (!prompt->is_array()) return r.TypeError("prompt", shapes, *prompt);
  if (prompt->empty()) return BadPrompt("prompt must not be empty");
  const json& first = prompt->front();
  if (first.is_number()) {
    out->prompt_is_ids = true;
    return ReadTokenIds(*prompt, &out->prompt_ids);
  }
  for (const json& p : *prompt) {
    if (p.type() != first.type() || !(p.is_string() || p.is_array())) {
      return BadPrompt("prompt must be " + shapes);
    }
  }
  if (prompt->size() > 1) {
    return BadPrompt("a list of " + std::to_string(prompt->size()) +
                     " prompts is not supported yet: send one prompt per request");
  }
  if (first.is_string()) {
    out->prompt_text = first.get<std::string>();
    return std::nullopt;
  }
  out->prompt_is_ids = true;
  return ReadTokenIds(first, &out->prompt_ids);
}

MaybeError ReadCompletionFields(const json& body, ParsedRequest* out) {
  const FieldReader r(body);
  G4_API_RETURN_IF_ERROR(ReadPrompt(r, out));
  if (const json* suffix = r.Find("suffix"); suffix != nullptr && IsSet(*suffix)) {
    return NotSupported("suffix");
  }
  G4_API_RETURN_IF_ERROR(r.Bool("echo", &out->echo));
  // Completions' `logprobs` is the number of alternatives per position (0 = the chosen token's
  // log-probability only).
  std::optional<int64_t> logprobs;
  G4_API_RETURN_IF_ERROR(r.Int("logprobs", &logprobs));
  if (logprobs.has_value()) {
    G4_API_RETURN_IF_ERROR(ReadLogprobRange("logprobs", *logprobs, &out->top_logprobs));
    out->logprobs = true;
  }
  if (!out->max_tokens.has_value()) out->max_tokens = kCompletionDefaultMaxTokens;
  return std::nullopt;
}

ParseResult Parse(std::string_view body, const ServerDefaults& defaults, ParsedRequest::Kind kind) {
  // No exception may leave the library; one reaching here is a bug in this file, reported as
  // a 500 so the fuzz test catches it rather than a client being blamed.
  try {
    ApiResult<json> parsed = ParseJsonObject(body);
    if (!parsed.ok()) return parsed.error();
    json& object = parsed.value();
    const bool chat = kind == ParsedRequest::Kind::kChat;
    ParsedRequest request;
    request.kind = kind;
    G4_API_RETURN_IF_ERROR(CheckModel(FieldReader(object), defaults.model_name));
    request.model = defaults.model_name;
    G4_API_RETURN_IF_ERROR(CheckUnsupported(object, chat));
    G4_API_RETURN_IF_ERROR(ReadCommon(object, defaults, &request));
    const FieldReader r(object);
    // Schemas keep the client's key order (properties are written in declared order): the body
    // again, as ordered_json, only when it has a schema to compile.
    nlohmann::ordered_json ordered;
    if (r.Has("tools") || r.Has("response_format")) {
      ordered = nlohmann::ordered_json::parse(body, nullptr, /*allow_exceptions=*/false);
    }
    if (chat) {
      G4_API_RETURN_IF_ERROR(ReadChatFields(object, &request));
      G4_API_RETURN_IF_ERROR(ReadToolFields(r, ordered, &request.constraints));
    } else {
      G4_API_RETURN_IF_ERROR(ReadCompletionFields(object, &request));
    }
    // Completions accept response_format too, as in vLLM.
    G4_API_RETURN_IF_ERROR(ReadResponseFormat(r, ordered, &request.constraints));
    if (chat) request.messages = std::move(object["messages"]);  // validated: moved, not copied
    return request;
  } catch (const std::exception& e) {
    return Internal(std::string("request parser failed: ") + e.what());
  } catch (...) {
    return Internal("request parser failed");
  }
}

}  // namespace

ParseResult ParseChatRequest(std::string_view body, const ServerDefaults& defaults) {
  return Parse(body, defaults, ParsedRequest::Kind::kChat);
}

ParseResult ParseCompletionRequest(std::string_view body, const ServerDefaults& defaults) {
  return Parse(body, defaults, ParsedRequest::Kind::kCompletion);
}

ApiResult<int> ResolveMaxTokens(const ParsedRequest& request, int64_t prompt_tokens,
                                int64_t max_model_len) {
  const std::string prompt_param =
      request.kind == ParsedRequest::Kind::kChat ? "messages" : "prompt";
  if (request.max_tokens.has_value()) {
    const int64_t m = *request.max_tokens;
    if (prompt_tokens + m > max_model_len) {
      return ContextLengthExceeded(max_model_len, prompt_tokens, m,
                                   prompt_tokens >= max_model_len ? prompt_param : "max_tokens");
    }
    return *request.max_tokens;
  }
  if (prompt_tokens >= max_model_len) {
    return ContextLengthExceeded(max_model_len, prompt_tokens, std::nullopt, prompt_param);
  }
  return static_cast<int>(
      std::min<int64_t>(max_model_len - prompt_tokens, std::numeric_limits<int>::max()));
}

std::optional<ApiError> ValidateLogitBias(const ParsedRequest& request, int64_t vocab_size) {
  for (const auto& [id, bias] : request.sampling.logit_bias) {
    if (id >= vocab_size) {
      return BadRequest("logit_bias token id " + std::to_string(id) +
                            " is outside the vocabulary [0, " + std::to_string(vocab_size) + ")",
                        "logit_bias");
    }
  }
  return std::nullopt;
}

std::optional<ApiError> ValidatePromptIds(const ParsedRequest& request, int64_t vocab_size) {
  if (!request.prompt_is_ids) return std::nullopt;
  for (int32_t id : request.prompt_ids) {
    if (id < 0 || id >= vocab_size) {
      return BadRequest("prompt token id " + std::to_string(id) +
                            " is outside the vocabulary [0, " + std::to_string(vocab_size) + ")",
                        "prompt");
    }
  }
  return std::nullopt;
}

}  // namespace g4::openai
