// Response builders: see response.h; shapes from server-api.md §2-§5 and §9 (vLLM's models).
#include "server/openai/response.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <random>
#include <thread>

namespace g4::openai {
namespace {

// JSON has no -inf; vLLM writes this for a token of probability zero.
constexpr float kMinLogprob = -9999.0f;

double CleanLogprob(float logprob) {
  return std::isfinite(logprob) ? static_cast<double>(logprob) : kMinLogprob;
}

ojson Bytes(const std::string& token) {
  ojson bytes = ojson::array();
  for (unsigned char c : token) bytes.push_back(static_cast<int>(c));
  return bytes;
}

// Characters (code points) in `text`, as Python's len() counts them for vLLM's text_offset;
// stray continuation bytes are not counted.
int64_t CodePoints(const std::string& text) {
  int64_t n = 0;
  for (unsigned char c : text) n += (c & 0xC0) != 0x80;
  return n;
}

ojson Header(const ResponseMeta& meta, std::string_view object) {
  ojson out;
  out["id"] = meta.id;
  out["object"] = object;
  out["created"] = meta.created;
  out["model"] = meta.model;
  return out;
}

// The fields after "choices": system_fingerprint (when set), usage, g4.
void Trailer(const ResponseMeta& meta, const ojson& usage,
             const std::vector<DegeneracyVerdict>& verdicts, ojson* out) {
  if (!meta.system_fingerprint.empty()) (*out)["system_fingerprint"] = meta.system_fingerprint;
  (*out)["usage"] = usage;
  (*out)["g4"] = DegeneracyJson(verdicts);
}

void AddReasoning(const std::optional<std::string>& reasoning, ojson* message) {
  if (!reasoning.has_value()) return;
  // vLLM's current name is "reasoning"; "reasoning_content" is what DeepSeek-style clients read.
  (*message)["reasoning_content"] = *reasoning;
  (*message)["reasoning"] = *reasoning;
}

}  // namespace

ojson Usage(int64_t prompt_tokens, int64_t completion_tokens, int64_t cached_tokens) {
  ojson usage;
  usage["prompt_tokens"] = prompt_tokens;
  usage["total_tokens"] = prompt_tokens + completion_tokens;
  usage["completion_tokens"] = completion_tokens;
  usage["prompt_tokens_details"] = {{"cached_tokens", cached_tokens}};
  return usage;
}

ojson DegeneracyJson(const DegeneracyVerdict& verdict) {
  ojson out;
  out["degenerate"] = verdict.degenerate;
  if (verdict.degenerate) {
    out["reason"] = verdict.reason;
    out["start"] = verdict.start;
  }
  return out;
}

ojson DegeneracyJson(const std::vector<DegeneracyVerdict>& verdicts) {
  if (verdicts.empty()) return DegeneracyJson(DegeneracyVerdict{});
  if (verdicts.size() == 1) return DegeneracyJson(verdicts.front());
  auto first = std::find_if(verdicts.begin(), verdicts.end(),
                            [](const DegeneracyVerdict& v) { return v.degenerate; });
  ojson out = DegeneracyJson(first == verdicts.end() ? verdicts.front() : *first);
  ojson each = ojson::array();
  for (const DegeneracyVerdict& v : verdicts) each.push_back(DegeneracyJson(v));
  out["choices"] = std::move(each);
  return out;
}

ojson ChatLogprobs(const std::vector<TokenLogprob>& tokens) {
  ojson content = ojson::array();
  for (const TokenLogprob& t : tokens) {
    ojson entry;
    entry["token"] = t.token;
    entry["logprob"] = CleanLogprob(t.logprob);
    entry["bytes"] = Bytes(t.token);
    ojson top = ojson::array();
    for (const TopLogprob& alt : t.top) {
      ojson a;
      a["token"] = alt.token;
      a["logprob"] = CleanLogprob(alt.logprob);
      a["bytes"] = Bytes(alt.token);
      top.push_back(std::move(a));
    }
    entry["top_logprobs"] = std::move(top);
    content.push_back(std::move(entry));
  }
  ojson out;
  out["content"] = std::move(content);
  return out;
}

ojson CompletionLogprobs(const std::vector<TokenLogprob>& tokens, int64_t text_offset) {
  ojson offsets = ojson::array(), logprobs = ojson::array(), texts = ojson::array(),
        tops = ojson::array();
  int64_t offset = text_offset;
  for (const TokenLogprob& t : tokens) {
    offsets.push_back(offset);
    offset += CodePoints(t.token);
    logprobs.push_back(CleanLogprob(t.logprob));
    texts.push_back(t.token);
    if (t.top.empty()) {
      tops.push_back(nullptr);
    } else {
      ojson top = ojson::object();
      for (const TopLogprob& alt : t.top) top[alt.token] = CleanLogprob(alt.logprob);
      tops.push_back(std::move(top));
    }
  }
  ojson out;
  out["text_offset"] = std::move(offsets);
  out["token_logprobs"] = std::move(logprobs);
  out["tokens"] = std::move(texts);
  out["top_logprobs"] = std::move(tops);
  return out;
}

ojson ChatCompletion(const ResponseMeta& meta, const Choice& choice, const ojson& usage,
                     const DegeneracyVerdict& verdict) {
  return ChatCompletion(meta, std::vector<Choice>{choice}, usage, {verdict});
}

ojson ChatCompletion(const ResponseMeta& meta, const std::vector<Choice>& choices,
                     const ojson& usage, const std::vector<DegeneracyVerdict>& verdicts) {
  ojson list = ojson::array();
  for (const Choice& choice : choices) {
    ojson message;
    message["role"] = "assistant";
    // OpenAI: content is null when the answer is only tool calls.
    message["content"] = choice.text.empty() && !choice.tool_calls.empty() ? ojson(nullptr)
                                                                           : ojson(choice.text);
    AddReasoning(choice.reasoning, &message);
    if (!choice.tool_calls.empty()) {
      ojson calls = ojson::array();
      for (const ToolCall& call : choice.tool_calls) {
        calls.push_back({{"id", call.id},
                         {"type", "function"},
                         {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
      }
      message["tool_calls"] = std::move(calls);
    }
    ojson c;
    c["index"] = choice.index;
    c["message"] = std::move(message);
    c["logprobs"] = choice.logprobs.has_value() ? ChatLogprobs(*choice.logprobs) : ojson(nullptr);
    c["finish_reason"] = choice.finish_reason;
    c["stop_reason"] = choice.stop_reason;
    list.push_back(std::move(c));
  }
  ojson out = Header(meta, "chat.completion");
  out["choices"] = std::move(list);
  Trailer(meta, usage, verdicts, &out);
  return out;
}

ojson ChatChunk(const ResponseMeta& meta, const Chunk& chunk) {
  ojson delta = ojson::object();
  if (chunk.role) delta["role"] = "assistant";
  if (chunk.text.has_value()) delta["content"] = *chunk.text;
  AddReasoning(chunk.reasoning, &delta);
  if (!chunk.tool_calls.empty()) {
    ojson calls = ojson::array();
    for (const ToolCallDelta& d : chunk.tool_calls) {
      ojson call;
      call["index"] = d.index;
      if (d.id) call["id"] = *d.id;
      if (d.name) call["type"] = "function";
      ojson function = ojson::object();
      if (d.name) function["name"] = *d.name;
      function["arguments"] = d.arguments;
      call["function"] = std::move(function);
      calls.push_back(std::move(call));
    }
    delta["tool_calls"] = std::move(calls);
  }
  ojson c;
  c["index"] = chunk.index;
  c["delta"] = std::move(delta);
  c["logprobs"] = chunk.logprobs.has_value() ? ChatLogprobs(*chunk.logprobs) : ojson(nullptr);
  c["finish_reason"] = chunk.finish_reason.has_value() ? ojson(*chunk.finish_reason)
                                                       : ojson(nullptr);
  if (chunk.finish_reason.has_value()) c["stop_reason"] = chunk.stop_reason;
  ojson out = Header(meta, "chat.completion.chunk");
  out["choices"] = ojson::array({std::move(c)});
  if (!meta.system_fingerprint.empty()) out["system_fingerprint"] = meta.system_fingerprint;
  if (chunk.usage_null) out["usage"] = nullptr;
  if (chunk.verdict.has_value()) out["g4"] = DegeneracyJson(*chunk.verdict);
  return out;
}

ojson TextCompletion(const ResponseMeta& meta, const Choice& choice, const ojson& usage,
                     const DegeneracyVerdict& verdict) {
  return TextCompletion(meta, std::vector<Choice>{choice}, usage, {verdict});
}

ojson TextCompletion(const ResponseMeta& meta, const std::vector<Choice>& choices,
                     const ojson& usage, const std::vector<DegeneracyVerdict>& verdicts) {
  ojson list = ojson::array();
  for (const Choice& choice : choices) {
    ojson c;
    c["index"] = choice.index;
    c["text"] = choice.text;
    c["logprobs"] = choice.logprobs.has_value()
                        ? CompletionLogprobs(*choice.logprobs, choice.text_offset)
                        : ojson(nullptr);
    c["finish_reason"] = choice.finish_reason;
    c["stop_reason"] = choice.stop_reason;
    list.push_back(std::move(c));
  }
  ojson out = Header(meta, "text_completion");
  out["choices"] = std::move(list);
  Trailer(meta, usage, verdicts, &out);
  return out;
}

ojson TextChunk(const ResponseMeta& meta, const Chunk& chunk) {
  ojson c;
  c["index"] = chunk.index;
  c["text"] = chunk.text.value_or("");
  c["logprobs"] = chunk.logprobs.has_value()
                      ? CompletionLogprobs(*chunk.logprobs, chunk.text_offset)
                      : ojson(nullptr);
  c["finish_reason"] = chunk.finish_reason.has_value() ? ojson(*chunk.finish_reason)
                                                       : ojson(nullptr);
  c["stop_reason"] = chunk.finish_reason.has_value() ? chunk.stop_reason : ojson(nullptr);
  ojson out = Header(meta, "text_completion");
  out["choices"] = ojson::array({std::move(c)});
  if (!meta.system_fingerprint.empty()) out["system_fingerprint"] = meta.system_fingerprint;
  if (chunk.usage_null) out["usage"] = nullptr;
  if (chunk.verdict.has_value()) out["g4"] = DegeneracyJson(*chunk.verdict);
  return out;
}

ojson UsageChunk(const ResponseMeta& meta, std::string_view object, const ojson& usage) {
  ojson out = Header(meta, object);
  out["choices"] = ojson::array();
  if (!meta.system_fingerprint.empty()) out["system_fingerprint"] = meta.system_fingerprint;
  out["usage"] = usage;
  return out;
}

ojson ModelsList(const std::string& name, int64_t created, int64_t max_model_len,
                 const std::string& root) {
  ojson permission;
  permission["id"] = NewRequestId("modelperm-");
  permission["object"] = "model_permission";
  permission["created"] = created;
  permission["allow_create_engine"] = false;
  permission["allow_sampling"] = true;
  permission["allow_logprobs"] = true;
  permission["allow_search_indices"] = false;
  permission["allow_view"] = true;
  permission["allow_fine_tuning"] = false;
  permission["organization"] = "*";
  permission["group"] = nullptr;
  permission["is_blocking"] = false;
  ojson card;
  card["id"] = name;
  card["object"] = "model";
  card["created"] = created;
  card["owned_by"] = "g4";
  card["root"] = root.empty() ? name : root;
  card["parent"] = nullptr;
  card["max_model_len"] = max_model_len;
  card["permission"] = ojson::array({std::move(permission)});
  ojson out;
  out["object"] = "list";
  out["data"] = ojson::array({std::move(card)});
  return out;
}

ojson TokenizeResponse(const std::vector<int32_t>& tokens, int64_t max_model_len,
                       const std::optional<std::vector<std::string>>& token_strs) {
  ojson out;
  out["count"] = tokens.size();
  out["max_model_len"] = max_model_len;
  out["tokens"] = tokens;
  out["token_strs"] = token_strs.has_value() ? ojson(*token_strs) : ojson(nullptr);
  return out;
}

ojson DetokenizeResponse(const std::string& prompt) {
  ojson out;
  out["prompt"] = prompt;
  return out;
}

std::string Dump(const ojson& body) {
  return body.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

std::string SseEvent(const ojson& body) {
  std::string out = "data: ";
  out += Dump(body);
  out += "\n\n";
  return out;
}

std::string NewRequestId(std::string_view prefix) {
  // One generator per thread, seeded from the OS, the thread and the clock so threads started
  // together never share a stream.
  thread_local std::mt19937_64 rng([] {
    std::random_device device;
    const auto thread = std::hash<std::thread::id>{}(std::this_thread::get_id());
    const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
    std::seed_seq seq{device(), device(), device(), device(), static_cast<unsigned>(thread),
                      static_cast<unsigned>(now)};
    return std::mt19937_64(seq);
  }());
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id(prefix);
  for (int word = 0; word < 2; ++word) {
    uint64_t bits = rng();
    for (int i = 0; i < 16; ++i, bits >>= 4) id.push_back(kHex[bits & 0xF]);
  }
  return id;
}

int64_t UnixNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace g4::openai
