// Tests for ParseModelOutput: reasoning vs content, tool calls, and the malformed variants.
#include <gtest/gtest.h>

#include "chat/chat.h"

namespace g4 {
namespace {

using ojson = nlohmann::ordered_json;

TEST(ChatParseTest, PlainContent) {
  const ParsedOutput p = ParseModelOutput("  The answer is 4.<turn|>");
  EXPECT_EQ(p.reasoning, "");
  EXPECT_EQ(p.content, "The answer is 4.");
  EXPECT_TRUE(p.tool_calls.empty());
}

TEST(ChatParseTest, ThoughtChannel) {
  ParsedOutput p = ParseModelOutput("<|channel>thought\nAdd 2 and 2.<channel|>It is 4.<turn|>");
  EXPECT_EQ(p.reasoning, "Add 2 and 2.");
  EXPECT_EQ(p.content, "It is 4.");
  // Cut off while thinking.
  p = ParseModelOutput("<|channel>thought\nStill thinking");
  EXPECT_EQ(p.reasoning, "Still thinking");
  EXPECT_EQ(p.content, "");
  // The prompt opened the channel; only its end was generated.
  p = ParseModelOutput("Thinking here.<channel|>Answer.");
  EXPECT_EQ(p.reasoning, "Thinking here.");
  EXPECT_EQ(p.content, "Answer.");
  // The empty thought block of the large-model prompt.
  p = ParseModelOutput("<|channel>thought\n<channel|>Hi!");
  EXPECT_EQ(p.reasoning, "");
  EXPECT_EQ(p.content, "Hi!");
}

TEST(ChatParseTest, ToolCall) {
  const ParsedOutput p = ParseModelOutput(
      "Let me check.<|tool_call>call:get_weather{location:<|\"|>Tokyo, JP<|\"|>,days:3,"
      "metric:true,ratio:0.5,tags:[<|\"|>a<|\"|>,<|\"|>b{c}<|\"|>],opts:{x:null}}<tool_call|>"
      "<|tool_response>");
  EXPECT_EQ(p.content, "Let me check.");
  ASSERT_EQ(p.tool_calls.size(), 1u);
  EXPECT_EQ(p.tool_calls[0].name, "get_weather");
  EXPECT_EQ(p.tool_calls[0].arguments,
            ojson::parse(R"({"location": "Tokyo, JP", "days": 3, "metric": true, "ratio": 0.5,
                             "tags": ["a", "b{c}"], "opts": {"x": null}})"));
}

TEST(ChatParseTest, SeveralCallsAndReasoning) {
  const ParsedOutput p = ParseModelOutput(
      "<|channel>thought\nTwo lookups.<channel|>"
      "<|tool_call>call:a{x:1}<tool_call|><|tool_call>call:b{y:<|\"|>z<|\"|>}<tool_call|>");
  EXPECT_EQ(p.reasoning, "Two lookups.");
  EXPECT_EQ(p.content, "");
  ASSERT_EQ(p.tool_calls.size(), 2u);
  EXPECT_EQ(p.tool_calls[0].name, "a");
  EXPECT_EQ(p.tool_calls[0].arguments, ojson::parse(R"({"x": 1})"));
  EXPECT_EQ(p.tool_calls[1].arguments, ojson::parse(R"({"y": "z"})"));
}

TEST(ChatParseTest, MalformedVariants) {
  // Missing <tool_call|>.
  ParsedOutput p = ParseModelOutput("<|tool_call>call:f{a:<|\"|>x<|\"|>}");
  ASSERT_EQ(p.tool_calls.size(), 1u);
  EXPECT_EQ(p.tool_calls[0].arguments, ojson::parse(R"({"a": "x"})"));
  // Single and double quotes, quoted keys, Python literals.
  p = ParseModelOutput("<|tool_call>call:f{a:'x y', \"b\": \"q\\\"z\", c: True, d: None}<tool_call|>");
  ASSERT_EQ(p.tool_calls.size(), 1u);
  EXPECT_EQ(p.tool_calls[0].arguments,
            ojson::parse(R"({"a": "x y", "b": "q\"z", "c": true, "d": null})"));
  // No "call:" prefix.
  p = ParseModelOutput("<|tool_call>f{n:2}<tool_call|>");
  ASSERT_EQ(p.tool_calls.size(), 1u);
  EXPECT_EQ(p.tool_calls[0].name, "f");
  // A closer without an opener.
  p = ParseModelOutput("Sure. call:f{n:2}<tool_call|>");
  ASSERT_EQ(p.tool_calls.size(), 1u);
  EXPECT_EQ(p.tool_calls[0].name, "f");
  EXPECT_EQ(p.content, "Sure.");
  // Unterminated string and object: the text up to the end is taken.
  p = ParseModelOutput("<|tool_call>call:f{a:<|\"|>never closed");
  ASSERT_EQ(p.tool_calls.size(), 1u);
  EXPECT_EQ(p.tool_calls[0].arguments, ojson::parse(R"({"a": "never closed"})"));
  // Bare words are strings.
  p = ParseModelOutput("<|tool_call>call:f{city:Paris,n:-1.5e2}<tool_call|>");
  EXPECT_EQ(p.tool_calls[0].arguments, ojson::parse(R"({"city": "Paris", "n": -150.0})"));
  // Garbage does not crash.
  for (const char* s : {"<|tool_call>", "<|tool_call>{{{{", "<tool_call|><tool_call|>",
                        "<|channel><|channel><channel|>", "<|tool_call>call:f{:,:,}}]]"}) {
    (void)ParseModelOutput(s);
  }
}

}  // namespace
}  // namespace g4
