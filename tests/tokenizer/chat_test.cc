// Exact-string tests of the Gemma 4 chat rendering (gemma4.md §4.3) and of choosing the
// generation-prompt form from a checkpoint.
#include "tokenizer/chat.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tokenizer/test_util.h"

namespace g4 {
namespace {

using json = nlohmann::json;
using tokenizer_test::ScopedTempDir;
using tokenizer_test::WriteFile;

std::string Render(const json& messages, const json& tools = nullptr, ChatOptions o = {}) {
  auto r = RenderChat(messages, tools, o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : "";
}

const json kWeatherTool = json::parse(R"({
  "type": "function",
  "function": {
    "name": "get_weather",
    "description": "Current weather for a city",
    "parameters": {
      "type": "object",
      "properties": {
        "location": {"type": "string", "description": "City name"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        "days": {"type": "integer"}
      },
      "required": ["location"]
    }
  }
})");

constexpr const char* kWeatherDeclaration =
    "<|tool>declaration:get_weather{description:<|\"|>Current weather for a city<|\"|>,"
    "parameters:{properties:{days:{type:<|\"|>INTEGER<|\"|>},"
    "location:{description:<|\"|>City name<|\"|>,type:<|\"|>STRING<|\"|>},"
    "unit:{enum:[<|\"|>celsius<|\"|>,<|\"|>fahrenheit<|\"|>],type:<|\"|>STRING<|\"|>}},"
    "required:[<|\"|>location<|\"|>],type:<|\"|>OBJECT<|\"|>}}<tool|>";

TEST(ChatTest, SingleUserTurn) {
  EXPECT_EQ(Render(json::parse(R"([{"role": "user", "content": "Hello"}])")),
            "<bos><|turn>user\nHello<turn|>\n<|turn>model\n");
}

TEST(ChatTest, SystemAndUser) {
  EXPECT_EQ(Render(json::parse(R"([{"role": "system", "content": "You are a helpful assistant."},
                                   {"role": "user", "content": "Hello"}])")),
            "<bos><|turn>system\nYou are a helpful assistant.<turn|>\n"
            "<|turn>user\nHello<turn|>\n<|turn>model\n");
}

TEST(ChatTest, DeveloperIsSystemAndContentIsTrimmed) {
  EXPECT_EQ(Render(json::parse(R"([{"role": "developer", "content": "  Be brief.\n"},
                                   {"role": "user", "content": "\n Hi \t"}])")),
            "<bos><|turn>system\nBe brief.<turn|>\n<|turn>user\nHi<turn|>\n<|turn>model\n");
}

TEST(ChatTest, MultiTurnStripsThoughtsFromHistory) {
  const json messages = json::parse(R"([
    {"role": "user", "content": "What is 2+2?"},
    {"role": "assistant", "content": "<|channel>thought\nadd them<channel|>2+2 is 4."},
    {"role": "user", "content": "And 3+3?"}])");
  EXPECT_EQ(Render(messages),
            "<bos><|turn>user\nWhat is 2+2?<turn|>\n<|turn>model\n2+2 is 4.<turn|>\n"
            "<|turn>user\nAnd 3+3?<turn|>\n<|turn>model\n");
  ChatOptions no_prompt;
  no_prompt.add_generation_prompt = false;
  EXPECT_EQ(Render(messages, nullptr, no_prompt),
            "<bos><|turn>user\nWhat is 2+2?<turn|>\n<|turn>model\n2+2 is 4.<turn|>\n"
            "<|turn>user\nAnd 3+3?<turn|>\n");
}

TEST(ChatTest, ThinkingOn) {
  ChatOptions o;
  o.enable_thinking = true;
  const json messages = json::parse(R"([{"role": "system", "content": "You are helpful."},
                                        {"role": "user", "content": "Hi"}])");
  EXPECT_EQ(Render(messages, nullptr, o),
            "<bos><|turn>system\n<|think|>\nYou are helpful.<turn|>\n"
            "<|turn>user\nHi<turn|>\n<|turn>model\n");
  // Without a system message the system turn holds only the switch.
  EXPECT_EQ(Render(json::parse(R"([{"role": "user", "content": "Hi"}])"), nullptr, o),
            "<bos><|turn>system\n<|think|>\n<turn|>\n<|turn>user\nHi<turn|>\n<|turn>model\n");
  // Earlier template revisions: no newline after <|think|>.
  o.style.newline_after_think = false;
  EXPECT_EQ(Render(messages, nullptr, o),
            "<bos><|turn>system\n<|think|>You are helpful.<turn|>\n"
            "<|turn>user\nHi<turn|>\n<|turn>model\n");
}

TEST(ChatTest, LargeModelGenerationPromptClosesAnEmptyThought) {
  ChatOptions o;
  o.style.empty_thought_in_generation_prompt = true;
  const json messages = json::parse(R"([{"role": "user", "content": "Hi"}])");
  EXPECT_EQ(Render(messages, nullptr, o),
            "<bos><|turn>user\nHi<turn|>\n<|turn>model\n<|channel>thought\n<channel|>");
  o.enable_thinking = true;
  EXPECT_EQ(Render(messages, nullptr, o),
            "<bos><|turn>system\n<|think|>\n<turn|>\n<|turn>user\nHi<turn|>\n<|turn>model\n");
}

TEST(ChatTest, ToolsDeclared) {
  const json messages = json::parse(R"([{"role": "system", "content": "Use tools."},
                                        {"role": "user", "content": "Weather in Tokyo?"}])");
  EXPECT_EQ(Render(messages, json::array({kWeatherTool})),
            std::string("<bos><|turn>system\nUse tools.") + kWeatherDeclaration +
                "<turn|>\n<|turn>user\nWeather in Tokyo?<turn|>\n<|turn>model\n");
}

TEST(ChatTest, ToolCallThenToolResult) {
  const json messages = json::parse(R"([
    {"role": "user", "content": "Weather in Tokyo?"},
    {"role": "assistant", "content": null, "reasoning_content": "Need the tool.",
     "tool_calls": [{"id": "call_1", "type": "function",
                     "function": {"name": "get_weather",
                                  "arguments": "{\"location\": \"Tokyo\", \"days\": 2}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "sunny, 21 C"}])");
  const std::string head = std::string("<bos><|turn>system\n") + kWeatherDeclaration +
                           "<turn|>\n<|turn>user\nWeather in Tokyo?<turn|>\n<|turn>model\n";
  const std::string call =
      "<|channel>thought\nNeed the tool.\n<channel|>"
      "<|tool_call>call:get_weather{days:2,location:<|\"|>Tokyo<|\"|>}<tool_call|>"
      "<|tool_response>response:get_weather{value:<|\"|>sunny, 21 C<|\"|>}<tool_response|>";
  // The model continues its own turn after the result: no generation prompt is added.
  EXPECT_EQ(Render(messages, json::array({kWeatherTool})), head + call);

  // The final answer continues the same model turn.
  json done = messages;
  done.push_back({{"role", "assistant"}, {"content", "It is sunny."}});
  EXPECT_EQ(Render(done, json::array({kWeatherTool})),
            head + call + "It is sunny.<turn|>\n<|turn>model\n");

  // A call still waiting for its result ends with <|tool_response>.
  json pending = messages;
  pending.erase(pending.end() - 1);
  EXPECT_EQ(Render(pending, json::array({kWeatherTool})),
            head +
                "<|channel>thought\nNeed the tool.\n<channel|>"
                "<|tool_call>call:get_weather{days:2,location:<|\"|>Tokyo<|\"|>}<tool_call|>"
                "<|tool_response>");
}

TEST(ChatTest, ReasoningIsNotReplayedBeforeTheLastUserTurn) {
  const json messages = json::parse(R"([
    {"role": "user", "content": "a"},
    {"role": "assistant", "reasoning_content": "r1",
     "tool_calls": [{"id": "1", "function": {"name": "f", "arguments": {"x": [1, true, null]}}}]},
    {"role": "tool", "tool_call_id": "1", "content": {"ok": "yes"}},
    {"role": "assistant", "content": "done"},
    {"role": "user", "content": "b"}])");
  EXPECT_EQ(Render(messages),
            "<bos><|turn>user\na<turn|>\n<|turn>model\n"
            "<|tool_call>call:f{x:[1,true,None]}<tool_call|>"
            "<|tool_response>response:f{ok:<|\"|>yes<|\"|>}<tool_response|>"
            "done<turn|>\n<|turn>user\nb<turn|>\n<|turn>model\n");
}

TEST(ChatTest, ConsecutiveAssistantMessagesShareOneTurnHeader) {
  const json messages = json::parse(R"([
    {"role": "user", "content": "Hi"},
    {"role": "assistant", "content": "Hello."},
    {"role": "assistant", "content": "How can I help?"}])");
  EXPECT_EQ(Render(messages),
            "<bos><|turn>user\nHi<turn|>\n<|turn>model\nHello.<turn|>\nHow can I help?<turn|>\n"
            "<|turn>model\n");
}

TEST(ChatTest, MalformedMessagesAreRejected) {
  EXPECT_FALSE(RenderChat(json::object(), nullptr, {}).ok());
  auto r = RenderChat(json::parse(R"([{"role": "robot", "content": "x"}])"), nullptr, {});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), ::testing::HasSubstr("messages[0].role is 'robot'"));
  r = RenderChat(json::parse(R"([{"role": "user", "content": "x"},
                                 {"role": "tool", "content": "y"}])"), nullptr, {});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), ::testing::HasSubstr("messages[1]"));
}

TEST(ChatTest, StripThinking) {
  EXPECT_EQ(StripThinking("  <|channel>thought\nx<channel|>A<|channel>y<channel|>B  "), "AB");
  EXPECT_EQ(StripThinking("no thoughts"), "no thoughts");
  EXPECT_EQ(StripThinking("A<|channel>unclosed"), "A");
}

TEST(ChatStyleTest, FromTemplateText) {
  EXPECT_FALSE(ChatStyleFromTemplate("{{- '<|turn>model\\n' -}}").empty_thought_in_generation_prompt);
  EXPECT_TRUE(ChatStyleFromTemplate("{{- '<|channel>thought\\n<channel|>' -}}")
                  .empty_thought_in_generation_prompt);
  EXPECT_TRUE(ChatStyleFromTemplate("{{- '<|think|>\\n' -}}").newline_after_think);
  EXPECT_FALSE(ChatStyleFromTemplate("{{- '<|think|>' -}}").newline_after_think);
}

TEST(ChatStyleTest, FromCheckpointFiles) {
  ScopedTempDir dir;
  auto style = DetectChatStyle(dir.path());
  ASSERT_TRUE(style.ok());
  EXPECT_FALSE(style->empty_thought_in_generation_prompt);
  EXPECT_EQ(style->source, "default");

  WriteFile(dir.File("config.json"), R"({"text_config": {"hidden_size_per_layer_input": 0}})");
  style = DetectChatStyle(dir.path());
  ASSERT_TRUE(style.ok());
  EXPECT_TRUE(style->empty_thought_in_generation_prompt);
  WriteFile(dir.File("config.json"), R"({"text_config": {"hidden_size_per_layer_input": 256}})");
  EXPECT_FALSE(DetectChatStyle(dir.path())->empty_thought_in_generation_prompt);

  WriteFile(dir.File("tokenizer_config.json"),
            R"({"chat_template": "{{ '<|channel>thought\\n<channel|>' }}"})");
  EXPECT_TRUE(DetectChatStyle(dir.path())->empty_thought_in_generation_prompt);

  WriteFile(dir.File("chat_template.jinja"), "{{- '<|turn>model\\n' -}}");
  style = DetectChatStyle(dir.path());
  EXPECT_FALSE(style->empty_thought_in_generation_prompt);
  EXPECT_THAT(style->source, ::testing::HasSubstr("chat_template.jinja"));
}

}  // namespace
}  // namespace g4
