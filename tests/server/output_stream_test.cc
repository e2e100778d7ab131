// OutputStream: reasoning, content and tool calls split from an answer as it streams, the same
// whether the text arrives token by token or at once.
#include "server/output_stream.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace g4 {
namespace {

// Everything one stream produced, with call deltas merged the way a client merges them.
struct Collected {
  std::string content, reasoning;
  std::vector<std::string> names, ids, arguments;
  int deltas_with_name = 0;
};

void Merge(const OutputDelta& d, Collected* c) {
  c->content += d.content;
  c->reasoning += d.reasoning;
  for (const openai::ToolCallDelta& t : d.tool_calls) {
    if (t.index == static_cast<int>(c->names.size())) {  // a new call: its first delta
      ASSERT_TRUE(t.id.has_value() && t.name.has_value()) << "the first delta names the call";
      c->names.push_back(*t.name);
      c->ids.push_back(*t.id);
      c->arguments.emplace_back();
      ++c->deltas_with_name;
    } else {
      ASSERT_LT(t.index, static_cast<int>(c->names.size()));
      EXPECT_FALSE(t.name.has_value()) << "only the first delta carries the name";
    }
    c->arguments[static_cast<size_t>(t.index)] += t.arguments;
  }
}

Collected Collect(const std::vector<std::string>& pieces, bool parse_tools) {
  OutputStream stream(parse_tools);
  Collected c;
  for (const std::string& p : pieces) {
    OutputDelta d;
    stream.Feed(p, &d);
    Merge(d, &c);
  }
  OutputDelta d;
  stream.Finish(&d);
  Merge(d, &c);
  return c;
}

std::string Join(const std::vector<std::string>& pieces) {
  std::string s;
  for (const std::string& p : pieces) s += p;
  return s;
}

const std::vector<std::string> kCallAnswer = {
    " Let", " me", " check", ".", "<|tool_call>", "call", ":", "get", "_weather", "{",
    "city", ":", "<|\"|>", "Paris", "<|\"|>", ",", "days", ":", "3", "}", "<tool_call|>"};

TEST(OutputStreamTest, ToolCallStreamedAsOpenAiDeltas) {
  OutputStream stream(/*parse_tools=*/true);
  std::vector<OutputDelta> deltas;
  for (const std::string& p : kCallAnswer) {
    deltas.emplace_back();
    stream.Feed(p, &deltas.back());
  }
  // The name goes out as soon as "{" shows it is complete, the arguments when the call closes.
  const OutputDelta& at_brace = deltas[9];
  ASSERT_EQ(at_brace.tool_calls.size(), 1u);
  EXPECT_EQ(at_brace.tool_calls[0].index, 0);
  EXPECT_EQ(at_brace.tool_calls[0].name, "get_weather");
  ASSERT_TRUE(at_brace.tool_calls[0].id.has_value());
  EXPECT_EQ(at_brace.tool_calls[0].id->rfind("call_", 0), 0u);
  EXPECT_EQ(at_brace.tool_calls[0].arguments, "");
  const OutputDelta& at_close = deltas.back();
  ASSERT_EQ(at_close.tool_calls.size(), 1u);
  EXPECT_FALSE(at_close.tool_calls[0].name.has_value());
  EXPECT_EQ(at_close.tool_calls[0].arguments, R"({"city":"Paris","days":3})");
  ASSERT_EQ(stream.tool_calls().size(), 1u);
  EXPECT_EQ(stream.tool_calls()[0].arguments, R"({"city":"Paris","days":3})");
  EXPECT_EQ(stream.tool_calls()[0].id, *at_brace.tool_calls[0].id);
}

TEST(OutputStreamTest, PiecewiseEqualsWholeText) {
  std::vector<std::string> pieces = {"<|channel>", "thought", "\n", "Think", "ing", "<channel|>"};
  pieces.insert(pieces.end(), kCallAnswer.begin(), kCallAnswer.end());
  pieces.insert(pieces.end(), {"<|tool_call>", "call:now{}", "<tool_call|>"});
  const Collected streamed = Collect(pieces, true);
  const Collected whole = Collect({Join(pieces)}, true);
  EXPECT_EQ(streamed.content, " Let me check.") << "the leading space is kept";
  EXPECT_EQ(streamed.reasoning, "Thinking");
  EXPECT_EQ(streamed.content, whole.content);
  EXPECT_EQ(streamed.reasoning, whole.reasoning);
  EXPECT_EQ(streamed.names, (std::vector<std::string>{"get_weather", "now"}));
  EXPECT_EQ(streamed.names, whole.names);
  EXPECT_EQ(streamed.arguments, whole.arguments);
  EXPECT_EQ(streamed.arguments[1], "{}");
  EXPECT_NE(streamed.ids[0], streamed.ids[1]);
}

TEST(OutputStreamTest, WithoutToolsTheMarkersStayText) {
  const Collected c = Collect(kCallAnswer, /*parse_tools=*/false);
  EXPECT_EQ(c.content, Join(kCallAnswer));
  EXPECT_TRUE(c.names.empty());
}

TEST(OutputStreamTest, AnUnclosedCallIsFinishedAsItStands) {
  const Collected c = Collect({"<|tool_call>", "call:add{a:1,b:", "2"}, true);
  ASSERT_EQ(c.names.size(), 1u);
  EXPECT_EQ(c.names[0], "add");
  EXPECT_EQ(c.arguments[0], R"({"a":1,"b":2})");
  EXPECT_EQ(c.content, "");
}

TEST(OutputStreamTest, AnEmptyCallIsNotACall) {
  const Collected c = Collect({"a", "<|tool_call>", "<tool_call|>", "b"}, true);
  EXPECT_TRUE(c.names.empty());
  EXPECT_EQ(c.content, "ab");
}

TEST(OutputStreamTest, NameWithoutArgumentsIsAnnouncedAtTheCloser) {
  const Collected c = Collect({"<|tool_call>", "call:now", "<tool_call|>"}, true);
  ASSERT_EQ(c.names.size(), 1u);
  EXPECT_EQ(c.names[0], "now");
  EXPECT_EQ(c.arguments[0], "{}");
}

}  // namespace
}  // namespace g4
