// ParseModelOutput: splits Gemma 4 output into reasoning, content and tool calls (see chat.h for
// the malformed variants it accepts). Never fails: whatever cannot be read as a call stays text.
#include "chat/chat.h"
#include "chat/tool_syntax.h"
#include "tokenizer/gemma4_tokens.h"

namespace g4 {
namespace {

using tool_syntax::Trim;
constexpr std::string_view kCall = "call:";

size_t FindOr(std::string_view s, std::string_view what, size_t from, size_t fallback) {
  const size_t i = s.find(what, from);
  return i == std::string_view::npos ? fallback : i;
}

// The text of one channel block without its "thought" header.
std::string ChannelText(std::string_view inner) {
  if (inner.substr(0, 7) == "thought") inner.remove_prefix(7);
  return std::string(Trim(inner));
}

}  // namespace

ParsedToolCall ParseToolCallBody(std::string_view body) {
  ParsedToolCall call;
  body = Trim(body);
  if (body.substr(0, kCall.size()) == kCall) body.remove_prefix(kCall.size());
  const size_t brace = body.find('{');
  call.name = std::string(Trim(body.substr(0, brace)));
  if (brace != std::string_view::npos) {
    size_t pos = brace;
    nlohmann::ordered_json args = tool_syntax::ParseValue(body, &pos);
    if (args.is_object()) call.arguments = std::move(args);
  }
  return call;
}

ParsedOutput ParseModelOutput(std::string_view text) {
  ParsedOutput out;
  // Generation ends at the end of the turn; a trailing <|tool_response> or <eos> is a stop token.
  for (const std::string_view stop : {gemma4::kTurnEnd, gemma4::kEos, gemma4::kToolResponseStart}) {
    text = text.substr(0, FindOr(text, stop, 0, text.size()));
  }

  // Thought channels.
  std::string rest;
  size_t i = 0;
  const size_t first_open = FindOr(text, gemma4::kChannelStart, 0, text.size());
  const size_t first_close = FindOr(text, gemma4::kChannelEnd, 0, text.size());
  if (first_close < first_open) {  // the prompt opened the channel; only its end is generated
    out.reasoning = ChannelText(text.substr(0, first_close));
    i = first_close + gemma4::kChannelEnd.size();
  }
  while (i < text.size()) {
    const size_t open = FindOr(text, gemma4::kChannelStart, i, text.size());
    rest += text.substr(i, open - i);
    if (open == text.size()) break;
    const size_t inner = open + gemma4::kChannelStart.size();
    const size_t close = FindOr(text, gemma4::kChannelEnd, inner, text.size());
    const std::string part = ChannelText(text.substr(inner, close - inner));
    if (!part.empty()) {
      if (!out.reasoning.empty()) out.reasoning += '\n';
      out.reasoning += part;
    }
    i = close == text.size() ? close : close + gemma4::kChannelEnd.size();
  }

  // Tool calls in what is left.
  std::string content;
  const std::string_view s = rest;
  size_t j = 0;
  while (j < s.size()) {
    const size_t open = FindOr(s, gemma4::kToolCallStart, j, s.size());
    const size_t close = FindOr(s, gemma4::kToolCallEnd, j, s.size());
    if (open == s.size() && close == s.size()) {
      content += s.substr(j);
      break;
    }
    if (close < open) {
      // A closer without an opener: the call starts at the last "call:" before it, if any.
      const std::string_view before = s.substr(j, close - j);
      const size_t c = before.rfind(kCall);
      if (c == std::string_view::npos) {
        content += before;  // a stray marker: drop it, keep the text
      } else {
        content += before.substr(0, c);
        out.tool_calls.push_back(ParseToolCallBody(before.substr(c)));
      }
      j = close + gemma4::kToolCallEnd.size();
      continue;
    }
    content += s.substr(j, open - j);
    const size_t body = open + gemma4::kToolCallStart.size();
    // The body ends at its closer, or (closer missing) at the next opener or the end.
    const size_t next_open = FindOr(s, gemma4::kToolCallStart, body, s.size());
    const size_t end = std::min(FindOr(s, gemma4::kToolCallEnd, body, s.size()), next_open);
    ParsedToolCall call = ParseToolCallBody(s.substr(body, end - body));
    if (!call.name.empty()) out.tool_calls.push_back(std::move(call));
    j = end;
    if (s.substr(j, gemma4::kToolCallEnd.size()) == gemma4::kToolCallEnd) {
      j += gemma4::kToolCallEnd.size();
    }
  }
  out.content = std::string(Trim(content));
  return out;
}

}  // namespace g4
