// Exact-string tests of the Gemma 4 chat rendering (gemma4.md §4.3), of the Gemma 3 rendering and
// its refusals (Python Jinja on Google's template: gemma3_chat_template_test.cc), of the "none"
// format, and of choosing the format and generation-prompt form from a checkpoint.
#include "chat/chat.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

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

ChatOptions Gemma3() {
  ChatOptions o;
  o.style.format = ChatFormat::kGemma3;
  return o;
}

TEST(Gemma3ChatTest, SingleUserTurn) {
  EXPECT_EQ(Render(json::parse(R"([{"role": "user", "content": " Hello\n"}])"), nullptr, Gemma3()),
            "<bos><start_of_turn>user\nHello<end_of_turn>\n<start_of_turn>model\n");
}

TEST(Gemma3ChatTest, SystemTextIsPrependedToTheFirstUserTurnUntrimmed) {
  EXPECT_EQ(Render(json::parse(R"([{"role": "system", "content": "You are helpful."},
                                   {"role": "user", "content": "Hi"}])"),
                   nullptr, Gemma3()),
            "<bos><start_of_turn>user\nYou are helpful.\n\nHi<end_of_turn>\n"
            "<start_of_turn>model\n");
  // developer is OpenAI's name for system; the template does not trim the system text.
  EXPECT_EQ(Render(json::parse(R"([{"role": "developer", "content": "  Be brief.\n"},
                                   {"role": "user", "content": "\n Hi \t"}])"),
                   nullptr, Gemma3()),
            "<bos><start_of_turn>user\n  Be brief.\n\n\nHi<end_of_turn>\n<start_of_turn>model\n");
  // Of a list, the template takes the first part's text.
  EXPECT_EQ(Render(json::parse(R"([{"role": "system", "content": [{"type": "text", "text": "A"},
                                                                 {"type": "text", "text": "B"}]},
                                   {"role": "user", "content": "Hi"}])"),
                   nullptr, Gemma3()),
            "<bos><start_of_turn>user\nA\n\nHi<end_of_turn>\n<start_of_turn>model\n");
}

TEST(Gemma3ChatTest, MultiTurnAssistantIsModel) {
  const json messages = json::parse(R"([
    {"role": "user", "content": "What is 2+2?"},
    {"role": "assistant", "content": " 4. "},
    {"role": "user", "content": [{"type": "text", "text": " look "}, {"type": "image"},
                                 {"type": "text", "text": "this"}]}])");
  ChatOptions o = Gemma3();
  o.enable_thinking = true;  // Gemma 3 has no thinking switch: ignored
  EXPECT_EQ(Render(messages, nullptr, o),
            "<bos><start_of_turn>user\nWhat is 2+2?<end_of_turn>\n<start_of_turn>model\n4."
            "<end_of_turn>\n<start_of_turn>user\nlook<start_of_image>this<end_of_turn>\n"
            "<start_of_turn>model\n");
  o.add_generation_prompt = false;
  EXPECT_EQ(Render(json::parse(R"([{"role": "user", "content": "Q"},
                                   {"role": "assistant", "content": "A"}])"),
                   nullptr, o),
            "<bos><start_of_turn>user\nQ<end_of_turn>\n<start_of_turn>model\nA<end_of_turn>\n");
  // Only a system message: the template renders no turn at all.
  EXPECT_EQ(Render(json::parse(R"([{"role": "system", "content": "S"}])"), nullptr, Gemma3()),
            "<bos><start_of_turn>model\n");
}

TEST(Gemma3ChatTest, RefusesWhatTheFormatCannotSay) {
  auto fails = [](const json& messages, const json& tools, const std::string& what) {
    auto r = RenderChat(messages, tools, Gemma3());
    ASSERT_FALSE(r.ok()) << what;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << what;
    EXPECT_THAT(r.status().message(), ::testing::HasSubstr(what));
  };
  const json hi = json::parse(R"([{"role": "user", "content": "Hi"}])");
  fails(hi, json::array({kWeatherTool}), "no tool syntax");
  fails(json::parse(R"([{"role": "user", "content": "Hi"},
                        {"role": "assistant", "tool_calls": [{"id": "c",
                          "function": {"name": "f", "arguments": "{}"}}]}])"),
        nullptr, "messages[1].tool_calls");
  fails(json::parse(R"([{"role": "user", "content": "Hi"}, {"role": "tool", "content": "x"}])"),
        nullptr, "messages[1]: role 'tool'");
  fails(json::parse(R"([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])"),
        nullptr, "messages[1] has role 'user' where Gemma 3's chat template expects an "
                 "assistant message: conversation roles must alternate");
  fails(json::parse(R"([{"role": "assistant", "content": "a"}])"), nullptr,
        "messages[0] has role 'assistant' where Gemma 3's chat template expects a user");
  fails(json::parse(R"([{"role": "user", "content": null}])"), nullptr,
        "messages[0].content is null");
  fails(json::parse(R"([{"role": "user", "content": [{"type": "input_audio"}]}])"), nullptr,
        "messages[0].content[0] has type 'input_audio'");
  fails(json::parse(R"([{"role": "system", "content": null}, {"role": "user", "content": "x"}])"),
        nullptr, "messages[0].content must be a string or an array");
  fails(json::parse(R"([{"role": "robot", "content": "x"}])"), nullptr, "messages[0].role");
  fails(json::object(), nullptr, "messages must be an array");
  fails(json::array(), nullptr, "messages is empty");  // the template reads messages[0]
  // Empty tools are no tools; null is fine too.
  EXPECT_TRUE(RenderChat(hi, json::array(), Gemma3()).ok());
}

// Whatever JSON arrives, the Gemma 3 renderer answers with text or a status, never an exception.
TEST(Gemma3ChatTest, OddShapesNeverThrow) {
  const std::vector<json> values = {
      nullptr, true, 7, "text", " ", json::array(), json::object(),
      json::array({json::object({{"type", "text"}, {"text", "x"}})}),
      json::array({json::object({{"type", "image"}}), "not a part", 3}),
      json::array({json::object({{"type", "text"}, {"text", nullptr}})}),
      json::array({json::object({{"type", "text"}, {"text", 5}})}),
      json::object({{"type", "text"}})};
  const std::vector<json> roles = {"user", "assistant", "system", "developer", "tool", nullptr, 3};
  std::mt19937 rng(11);
  for (int i = 0; i < 3000; ++i) {
    json messages = json::array();
    for (int k = 0, n = static_cast<int>(rng() % 5); k < n; ++k) {
      json m = json::object();
      if (rng() % 8) m["role"] = roles[rng() % roles.size()];
      if (rng() % 6) m["content"] = values[rng() % values.size()];
      if (rng() % 10 == 0) m["tool_calls"] = values[rng() % values.size()];
      messages.push_back(rng() % 20 ? m : values[rng() % values.size()]);
    }
    const json tools = rng() % 10 ? json(nullptr) : values[rng() % values.size()];
    ChatOptions o = Gemma3();
    o.add_generation_prompt = rng() % 2;
    try {
      auto r = RenderChat(messages, tools, o);
      if (r.ok()) {
        EXPECT_EQ(r->rfind("<bos>", 0), 0u);
      } else {
        EXPECT_FALSE(r.status().message().empty());
      }
    } catch (const std::exception& e) {
      ADD_FAILURE() << "threw " << e.what() << " for " << messages.dump();
    }
  }
}

TEST(ChatFormatTest, NoneRefusesEveryChat) {
  ChatOptions o;
  o.style.format = ChatFormat::kNone;
  o.style.source = "m.gguf (no tokenizer.chat_template)";
  auto r = RenderChat(json::parse(R"([{"role": "user", "content": "Hi"}])"), nullptr, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.status().message(), ::testing::HasSubstr("the model has no chat template"));
  EXPECT_THAT(r.status().message(), ::testing::HasSubstr("m.gguf"));
  EXPECT_THAT(r.status().message(), ::testing::HasSubstr("only /v1/completions"));
  EXPECT_EQ(ChatFormatName(ChatFormat::kGemma4), "gemma4");
  EXPECT_EQ(ChatFormatName(ChatFormat::kGemma3), "gemma3");
  EXPECT_EQ(ChatFormatName(ChatFormat::kNone), "none");
  EXPECT_EQ(ChatStyle{}.format, ChatFormat::kGemma4);
}

TEST(ChatStyleTest, FormatFromTemplateText) {
  EXPECT_EQ(ChatStyleFromTemplate("{{ '<start_of_turn>' + role + '\n' }}").format,
            ChatFormat::kGemma3);
  EXPECT_EQ(ChatStyleFromTemplate("{{- '<|turn>model\n' -}}").format, ChatFormat::kGemma4);
  // Gemma 4's markers win over a stray Gemma 3 one; unknown text keeps the default.
  EXPECT_EQ(ChatStyleFromTemplate("{{ '<|turn>' }}{# not <start_of_turn> #}").format,
            ChatFormat::kGemma4);
  EXPECT_EQ(ChatStyleFromTemplate("{{ messages }}").format, ChatFormat::kGemma4);
}

TEST(ChatStyleTest, Gemma3CheckpointFiles) {
  ScopedTempDir dir;
  WriteFile(dir.File("config.json"), R"({"model_type": "gemma3_text", "hidden_size": 640})");
  auto style = DetectChatStyle(dir.path());
  ASSERT_TRUE(style.ok());
  EXPECT_EQ(style->format, ChatFormat::kNone);
  EXPECT_THAT(style->source, ::testing::HasSubstr("gemma3_text"));
  WriteFile(dir.File("config.json"), R"({"model_type": "gemma3", "text_config": {}})");
  EXPECT_EQ(DetectChatStyle(dir.path())->format, ChatFormat::kNone);
  WriteFile(dir.File("config.json"), R"({"model_type": "gemma4", "text_config": {}})");
  EXPECT_EQ(DetectChatStyle(dir.path())->format, ChatFormat::kGemma4);

  WriteFile(dir.File("config.json"), R"({"model_type": "gemma3_text"})");
  WriteFile(dir.File("tokenizer_config.json"),
            R"({"chat_template": "{{ bos_token }}{{ '<start_of_turn>user\n' }}"})");
  style = DetectChatStyle(dir.path());
  ASSERT_TRUE(style.ok());
  EXPECT_EQ(style->format, ChatFormat::kGemma3);
  EXPECT_THAT(style->source, ::testing::HasSubstr("tokenizer_config.json"));
  WriteFile(dir.File("chat_template.jinja"), "{{- '<|turn>model\n' -}}");
  EXPECT_EQ(DetectChatStyle(dir.path())->format, ChatFormat::kGemma4);
}

}  // namespace
}  // namespace g4
