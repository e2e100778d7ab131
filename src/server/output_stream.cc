#include "server/output_stream.h"

#include "chat/chat.h"
#include "tokenizer/gemma4_tokens.h"

namespace g4 {

void OutputStream::Feed(std::string_view piece, OutputDelta* out) {
  std::string content;
  splitter_.Feed(piece, &content, &out->reasoning);
  FeedContent(content, out);
}

void OutputStream::FeedContent(std::string_view text, OutputDelta* out) {
  if (!parse_tools_) {
    out->content.append(text);
    return;
  }
  while (!text.empty()) {
    if (!in_call_) {
      const size_t open = text.find(gemma4::kToolCallStart);
      out->content.append(text.substr(0, open));
      if (open == std::string_view::npos) return;
      text.remove_prefix(open + gemma4::kToolCallStart.size());
      in_call_ = true;
      announced_ = false;
      body_.clear();
      continue;
    }
    const size_t close = text.find(gemma4::kToolCallEnd);
    body_.append(text.substr(0, close));
    if (close == std::string_view::npos) {
      MaybeAnnounce(false, out);
      return;
    }
    text.remove_prefix(close + gemma4::kToolCallEnd.size());
    CloseCall(out);
  }
}

void OutputStream::MaybeAnnounce(bool closing, OutputDelta* out) {
  if (announced_) return;
  if (!closing && body_.find('{') == std::string::npos) return;
  const ParsedToolCall head = ParseToolCallBody(body_.substr(0, body_.find('{')));
  if (head.name.empty()) return;  // nothing callable yet (or at all)
  announced_ = true;
  openai::ToolCall call;
  call.id = openai::NewRequestId("call_");
  call.name = head.name;
  calls_.push_back(call);
  openai::ToolCallDelta d;
  d.index = static_cast<int>(calls_.size()) - 1;
  d.id = call.id;
  d.name = call.name;
  out->tool_calls.push_back(std::move(d));
}

void OutputStream::CloseCall(OutputDelta* out) {
  in_call_ = false;
  MaybeAnnounce(true, out);
  if (!announced_) return;  // "<|tool_call><tool_call|>" or no name: not a call
  const ParsedToolCall parsed = ParseToolCallBody(body_);
  openai::ToolCall& call = calls_.back();
  // Invalid UTF-8 in a string becomes U+FFFD rather than an exception.
  call.arguments =
      parsed.arguments.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  openai::ToolCallDelta d;
  d.index = static_cast<int>(calls_.size()) - 1;
  d.arguments = call.arguments;
  out->tool_calls.push_back(std::move(d));
  body_.clear();
}

void OutputStream::Finish(OutputDelta* out) {
  if (in_call_) CloseCall(out);
}

}  // namespace g4
