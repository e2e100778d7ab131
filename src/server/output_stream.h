// OutputStream: splits a chat answer into reasoning, content and tool calls as its text
// arrives. The streamed chunks and the non-streamed body are both built from it (the body
// feeds the whole text at once), so the two never differ. Gemma 4's markers (<|channel>,
// <channel|>, <|tool_call>, <tool_call|>) are single tokens rendered as text, so a marker never
// straddles two pieces.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "server/openai/response.h"
#include "server/reasoning_stream.h"

namespace g4 {

struct OutputDelta {
  std::string content;
  std::string reasoning;
  std::vector<openai::ToolCallDelta> tool_calls;
};

class OutputStream {
 public:
  // `parse_tools`: read "<|tool_call>...<tool_call|>" as tool calls (a request that declared
  // tools); otherwise the markers stay in the content as text.
  explicit OutputStream(bool parse_tools) : parse_tools_(parse_tools) {}

  void Feed(std::string_view piece, OutputDelta* out);
  // The end of the answer: a call left open (its closer never came) is finished as it stands.
  void Finish(OutputDelta* out);

  // Every call so far, arguments as JSON text.
  const std::vector<openai::ToolCall>& tool_calls() const { return calls_; }

 private:
  void FeedContent(std::string_view text, OutputDelta* out);
  // Names the open call in a delta as soon as its body shows "NAME{" (or it closes).
  void MaybeAnnounce(bool closing, OutputDelta* out);
  void CloseCall(OutputDelta* out);

  bool parse_tools_;
  ReasoningSplitter splitter_;
  bool in_call_ = false;
  bool announced_ = false;
  std::string body_;  // the open call's text after <|tool_call>
  std::vector<openai::ToolCall> calls_;
};

}  // namespace g4
