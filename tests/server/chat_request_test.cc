// Tests for ParseChatRequest: every rejected shape of server-api.md §2 with its status, param
// and message; the defaults; max_completion_tokens precedence; unknown fields accepted; the
// sampling, stop, streaming and thinking fields mapped into ParsedRequest.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "server/openai/request.h"
#include "server/request_test_util.h"

namespace g4::openai {
namespace {

using ::g4::openai::testing::ChatBody;
using ::g4::openai::testing::ChatRequestOf;
using ::g4::openai::testing::ExpectRejected;
using ::g4::openai::testing::GemmaDefaults;
using ::g4::openai::testing::RejectCase;
using ::g4::openai::testing::RequestOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class ChatRejectTest : public ::testing::TestWithParam<RejectCase> {};

TEST_P(ChatRejectTest, AnswersWithTheStatusParamAndMessage) {
  const RejectCase& c = GetParam();
  ExpectRejected(ParseChatRequest(c.body, GemmaDefaults()), c);
}

const RejectCase kChatRejects[] = {
    // The body itself.
    {"MalformedJson", R"({"messages": [)", 400, "", "parse error at line 1, column"},
    {"EmptyBody", "", 400, "", "Invalid JSON in the request body"},
    {"TrailingGarbage", ChatBody("") + "x", 400, "", "parse error"},
    {"BodyIsArray", "[1, 2]", 400, "", "must be a JSON object, got an array"},
    {"BodyIsString", R"("hello")", 400, "", "must be a JSON object, got a string"},
    // model.
    {"UnknownModel", R"({"model":"gpt-4","messages":[{"role":"user","content":"x"}]})", 404,
     "model", "The model `gpt-4` does not exist."},
    {"ModelNotString", R"({"model":5,"messages":[{"role":"user","content":"x"}]})", 400, "model",
     "model must be a string, got an integer"},
    // messages.
    {"MessagesMissing", R"({"model":"gemma-4-e2b"})", 400, "messages", "messages is required"},
    {"MessagesNull", R"({"messages":null})", 400, "messages", "messages is required"},
    {"MessagesString", R"({"messages":"hi"})", 400, "messages", "must be an array, got a string"},
    {"MessagesEmpty", R"({"messages":[]})", 400, "messages", "messages must not be empty"},
    {"MessageNotObject", R"({"messages":[123]})", 400, "messages",
     "messages[0] must be an object, got an integer"},
    {"MessageNoRole", R"({"messages":[{}]})", 400, "messages", "messages[0].role is required"},
    {"RoleNotString", R"({"messages":[{"role":123}]})", 400, "messages",
     "messages[0].role must be a string"},
    {"UnknownRole", R"({"messages":[{"role":"user","content":"a"},{"role":"bot","content":"b"}]})",
     400, "messages", "messages[1].role must be one of system, developer, user, assistant, tool"},
    {"FunctionRole", R"({"messages":[{"role":"function","content":"b"}]})", 400, "messages",
     "got \"function\""},
    {"ContentNumber", R"({"messages":[{"role":"system","content":123}]})", 400, "messages",
     "messages[0].content must be a string, null or an array of parts"},
    {"SecondMessageEmptyObject", R"({"messages":[{"role":"system","content":"test"},{}]})", 400,
     "messages", "messages[1].role is required"},
    {"ImagePart",
     R"({"messages":[{"role":"user","content":[{"type":"text","text":"what is this"},)"
     R"({"type":"image_url","image_url":{"url":"http://x/y.png"}}]}]})",
     400, "messages", "messages[0].content[1]: content of type \"image_url\" is not supported"},
    {"AudioPart", R"({"messages":[{"role":"user","content":[{"type":"input_audio"}]}]})", 400,
     "messages", "\"input_audio\" is not supported"},
    {"FilePart", R"({"messages":[{"role":"user","content":[{"type":"file"}]}]})", 400, "messages",
     "file content is not supported"},
    {"UnknownPart", R"({"messages":[{"role":"user","content":[{"type":"hologram"}]}]})", 400,
     "messages", "\"hologram\" is not a known content part type"},
    {"PartWithoutText", R"({"messages":[{"role":"user","content":[{"type":"text"}]}]})", 400,
     "messages", "messages[0].content[0].text must be a string"},
    {"PartWithoutType", R"({"messages":[{"role":"user","content":[{"text":"x"}]}]})", 400,
     "messages", "messages[0].content[0].type must be a string"},
    {"PartNotObject", R"({"messages":[{"role":"user","content":["x"]}]})", 400, "messages",
     "messages[0].content[0] must be an object"},
    // Sampling fields: types and ranges.
    {"TemperatureString", ChatBody(R"("temperature":"hot")"), 400, "temperature",
     "temperature must be a number, got a string"},
    {"TemperatureAboveTwo", ChatBody(R"("temperature":2.5)"), 400, "temperature",
     "temperature must be in [0, 2], got 2.5"},
    {"TemperatureNegative", ChatBody(R"("temperature":-0.1)"), 400, "temperature",
     "temperature must be in [0, 2], got -0.1"},
    {"TemperatureBool", ChatBody(R"("temperature":true)"), 400, "temperature",
     "got a boolean"},
    {"TopPZero", ChatBody(R"("top_p":0)"), 400, "top_p", "top_p must be in (0, 1], got 0"},
    {"TopPAboveOne", ChatBody(R"("top_p":1.5)"), 400, "top_p", "top_p must be in (0, 1]"},
    {"TopKBelowMinusOne", ChatBody(R"("top_k":-2)"), 400, "top_k",
     "top_k must be -1 or 0 (disabled), or at least 1, got -2"},
    {"TopKFraction", ChatBody(R"("top_k":1.5)"), 400, "top_k", "must be an integer"},
    {"MinPAboveOne", ChatBody(R"("min_p":1.5)"), 400, "min_p", "min_p must be in [0, 1]"},
    {"MinPNegative", ChatBody(R"("min_p":-0.5)"), 400, "min_p", "min_p must be in [0, 1]"},
    {"PresencePenalty", ChatBody(R"("presence_penalty":3)"), 400, "presence_penalty",
     "presence_penalty must be in [-2, 2], got 3"},
    {"FrequencyPenalty", ChatBody(R"("frequency_penalty":-2.5)"), 400, "frequency_penalty",
     "frequency_penalty must be in [-2, 2], got -2.5"},
    {"RepetitionPenaltyZero", ChatBody(R"("repetition_penalty":0)"), 400, "repetition_penalty",
     "repetition_penalty must be greater than 0"},
    {"RepetitionPenaltyHuge", ChatBody(R"("repetition_penalty":1e300)"), 400,
     "repetition_penalty", "repetition_penalty must be greater than 0"},
    {"RepeatPenaltyNegative", ChatBody(R"("repeat_penalty":-1)"), 400, "repeat_penalty",
     "repeat_penalty must be greater than 0"},
    {"SeedString", ChatBody(R"("seed":"x")"), 400, "seed", "seed must be an integer"},
    {"SeedTooLarge", ChatBody(R"("seed":18446744073709551615)"), 400, "seed",
     "64-bit signed range"},
    {"SeedHugeFloat", ChatBody(R"("seed":1e30)"), 400, "seed", "64-bit signed range"},
    {"NumberOverflow", ChatBody(R"("temperature":1e400)"), 400, "", "number overflow"},
    // max_tokens.
    {"MaxTokensZero", ChatBody(R"("max_tokens":0)"), 400, "max_tokens",
     "max_tokens must be at least 1, got 0"},
    {"MaxTokensNegative", ChatBody(R"("max_tokens":-5)"), 400, "max_tokens", "at least 1"},
    {"MaxTokensString", ChatBody(R"("max_tokens":"10")"), 400, "max_tokens",
     "max_tokens must be an integer, got a string"},
    {"MaxTokensFraction", ChatBody(R"("max_tokens":10.5)"), 400, "max_tokens",
     "must be an integer"},
    {"MaxTokensTooLarge", ChatBody(R"("max_tokens":10000000000)"), 400, "max_tokens",
     "at most 2147483647"},
    {"MaxCompletionTokensZero", ChatBody(R"("max_tokens":5,"max_completion_tokens":0)"), 400,
     "max_completion_tokens", "max_completion_tokens must be at least 1"},
    // logprobs.
    {"LogprobsNotBool", ChatBody(R"("logprobs":1)"), 400, "logprobs",
     "logprobs must be a boolean, got an integer"},
    {"TopLogprobsWithoutLogprobs", ChatBody(R"("top_logprobs":5)"), 400, "top_logprobs",
     "when using `top_logprobs`, `logprobs` must be set to true."},
    {"TopLogprobsAboveTwenty", ChatBody(R"("logprobs":true,"top_logprobs":21)"), 400,
     "top_logprobs", "top_logprobs must be in [0, 20], got 21"},
    {"TopLogprobsNegative", ChatBody(R"("logprobs":true,"top_logprobs":-1)"), 400,
     "top_logprobs", "in [0, 20]"},
    // n and best_of.
    {"NSeventeen", ChatBody(R"("n":17)"), 400, "n", "n must be in [1, 16], got 17"},
    {"NZero", ChatBody(R"("n":0)"), 400, "n", "n must be in [1, 16], got 0"},
    {"NString", ChatBody(R"("n":"2")"), 400, "n", "n must be an integer"},
    {"BestOfTwo", ChatBody(R"("best_of":2)"), 400, "best_of", "best_of > 1 is not supported"},
    // stop.
    {"StopNumber", ChatBody(R"("stop":5)"), 400, "stop",
     "stop must be a string or an array of strings, got an integer"},
    {"StopListWithNumber", ChatBody(R"("stop":["a",1])"), 400, "stop",
     "got an element that is an integer"},
    {"StopTokenIdsNegative", ChatBody(R"("stop_token_ids":[-1])"), 400, "stop_token_ids",
     "non-negative token ids"},
    {"StopTokenIdsString", ChatBody(R"("stop_token_ids":"106")"), 400, "stop_token_ids",
     "must be an array"},
    // streaming.
    {"StreamOptionsWithoutStream", ChatBody(R"("stream_options":{"include_usage":true})"), 400,
     "stream_options", "Stream options can only be defined when `stream=True`."},
    {"StreamOptionsStreamFalse",
     ChatBody(R"("stream":false,"stream_options":{"include_usage":true})"), 400,
     "stream_options", "Stream options can only be defined when `stream=True`."},
    {"StreamString", ChatBody(R"("stream":"yes")"), 400, "stream",
     "stream must be a boolean, got a string"},
    {"StreamOptionsNotObject", ChatBody(R"("stream":true,"stream_options":true)"), 400,
     "stream_options", "stream_options must be an object"},
    {"IncludeUsageString", ChatBody(R"("stream":true,"stream_options":{"include_usage":"y"})"),
     400, "stream_options.include_usage", "stream_options.include_usage must be a boolean"},
    {"ContinuousUsageStats",
     ChatBody(R"("stream":true,"stream_options":{"continuous_usage_stats":true})"), 400,
     "stream_options.continuous_usage_stats", "is not supported yet"},
    // Booleans of the extensions.
    {"IgnoreEosString", ChatBody(R"("ignore_eos":"true")"), 400, "ignore_eos",
     "ignore_eos must be a boolean"},
    {"SkipSpecialTokensInt", ChatBody(R"("skip_special_tokens":1)"), 400, "skip_special_tokens",
     "must be a boolean"},
    {"IncludeReasoningString", ChatBody(R"("include_reasoning":"no")"), 400,
     "include_reasoning", "must be a boolean"},
    // Thinking.
    {"ReasoningEffortUnknown", ChatBody(R"("reasoning_effort":"extreme")"), 400,
     "reasoning_effort", "reasoning_effort must be one of none"},
    {"ReasoningEffortNumber", ChatBody(R"("reasoning_effort":3)"), 400, "reasoning_effort",
     "must be a string"},
    {"ChatTemplateKwargsString", ChatBody(R"("chat_template_kwargs":"x")"), 400,
     "chat_template_kwargs", "chat_template_kwargs must be an object"},
    {"EnableThinkingString", ChatBody(R"("chat_template_kwargs":{"enable_thinking":"yes"})"),
     400, "chat_template_kwargs.enable_thinking",
     "chat_template_kwargs.enable_thinking must be a boolean"},
    {"UserWithoutContent", R"({"messages":[{"role":"user"}]})", 400, "messages[0].content",
     "messages[0].content is required"},
    {"UserNullContent", R"({"messages":[{"role":"system","content":"s"},{"role":"user",)"
     R"("content":null}]})", 400, "messages[1].content", "messages[1].content is required"},
    {"AssistantWithoutContentOrCalls",
     R"({"messages":[{"role":"user","content":"x"},{"role":"assistant"}]})", 400,
     "messages[1].content", "is required (or tool_calls)"},
    // Tools and response_format.
    {"ToolsNotArray", ChatBody(R"("tools":"f")"), 400, "tools", "tools must be an array"},
    {"ToolNotFunction", ChatBody(R"("tools":[{"type":"retrieval"}])"), 400, "tools",
     "tools[0].type must be \"function\""},
    {"ToolWithoutFunction", ChatBody(R"("tools":[{"type":"function"}])"), 400, "tools",
     "tools[0].function must be an object"},
    {"ToolBadName", ChatBody(R"("tools":[{"type":"function","function":{"name":"a b"}}])"), 400,
     "tools", "tools[0].function.name must be 1-64 letters"},
    {"ToolTwice",
     ChatBody(R"("tools":[{"type":"function","function":{"name":"f"}},)"
              R"({"type":"function","function":{"name":"f"}}])"),
     400, "tools", "tools[1].function.name \"f\" is declared twice"},
    {"ToolParametersString",
     ChatBody(R"("tools":[{"type":"function","function":{"name":"f","parameters":"x"}}])"), 400,
     "tools", "parameters must be an object"},
    {"ToolParametersUnsupportedKeyword",
     ChatBody(R"("tools":[{"type":"function","function":{"name":"f","parameters":)"
              R"({"type":"object","properties":{"a":{"type":"string","pattern":"^x"}}}}}])"),
     400, "tools", "pattern"},
    {"ToolChoiceWithoutTools", ChatBody(R"("tool_choice":"required")"), 400, "tool_choice",
     "no tools are declared"},
    {"ToolChoiceUnknownString", ChatBody(R"("tool_choice":"sometimes")"), 400, "tool_choice",
     "tool_choice must be \"none\", \"auto\", \"required\" or a function"},
    {"ToolChoiceNumber", ChatBody(R"("tool_choice":5)"), 400, "tool_choice",
     "tool_choice must be a string or"},
    {"ToolChoiceUnknownName",
     ChatBody(R"("tools":[{"type":"function","function":{"name":"f"}}],)"
              R"("tool_choice":{"type":"function","function":{"name":"g"}})"),
     400, "tool_choice", "'g'"},
    {"FunctionCallNumber", ChatBody(R"("function_call":5)"), 400, "function_call",
     "function_call must be a string or"},
    {"Functions", ChatBody(R"("functions":[{"name":"f"}])"), 400, "functions",
     "functions is not supported yet"},
    {"ResponseFormatUnknownType", ChatBody(R"("response_format":{"type":"xml"})"), 400,
     "response_format", "must be \"text\", \"json_object\" or \"json_schema\", got \"xml\""},
    {"ResponseFormatJsonSchemaMissing", ChatBody(R"("response_format":{"type":"json_schema"})"),
     400, "response_format", "response_format.json_schema must be an object"},
    {"ResponseFormatSchemaMissing",
     ChatBody(R"("response_format":{"type":"json_schema","json_schema":{"name":"x"}})"), 400,
     "response_format", "response_format.json_schema.schema must be a JSON Schema object"},
    {"ResponseFormatUnsupportedKeyword",
     ChatBody(R"("response_format":{"type":"json_schema","json_schema":{"name":"x",)"
              R"("schema":{"type":"object","properties":{"e":{"type":"string",)"
              R"("format":"email"}}}}})"),
     400, "response_format", "format"},
    {"ResponseFormatWithForcedTool",
     ChatBody(R"("tools":[{"type":"function","function":{"name":"f"}}],)"
              R"("tool_choice":"required","response_format":{"type":"json_object"})"),
     400, "response_format", "cannot be combined with a forced tool call"},
    {"ResponseFormatString", ChatBody(R"("response_format":"json")"), 400, "response_format",
     "response_format must be an object"},
    {"ResponseFormatNoType", ChatBody(R"("response_format":{})"), 400, "response_format",
     "response_format.type must be a string"},
    // logit_bias (the vocabulary bound: ValidateLogitBias, once the model is known).
    {"LogitBiasString", ChatBody(R"("logit_bias":"x")"), 400, "logit_bias",
     "logit_bias must be an object"},
    {"LogitBiasTooHigh", ChatBody(R"("logit_bias":{"5":100.5})"), 400, "logit_bias",
     "logit_bias must be in [-100, 100] for every token, got 100.5"},
    {"LogitBiasTooLow", ChatBody(R"("logit_bias":{"5":-101})"), 400, "logit_bias",
     "in [-100, 100]"},
    {"LogitBiasWordKey", ChatBody(R"("logit_bias":{"hello":1})"), 400, "logit_bias",
     "logit_bias keys must be token ids (non-negative integers as strings), got \"hello\""},
    {"LogitBiasNegativeKey", ChatBody(R"("logit_bias":{"-3":1})"), 400, "logit_bias",
     "keys must be token ids"},
    {"LogitBiasHugeKey", ChatBody(R"("logit_bias":{"99999999999":1})"), 400, "logit_bias",
     "keys must be token ids"},
    {"LogitBiasStringValue", ChatBody(R"("logit_bias":{"5":"1"})"), 400, "logit_bias",
     "logit_bias[\"5\"] must be a number, got a string"},
    {"StopOnDegenerateString", ChatBody(R"("stop_on_degenerate":"yes")"), 400,
     "stop_on_degenerate", "stop_on_degenerate must be a boolean"},
    // Fields not supported yet: a 400 naming the field, never silently ignored.
    {"GuidedJson", ChatBody(R"("guided_json":{"type":"object"})"), 400, "guided_json",
     "guided_json is not supported yet"},
    {"StructuredOutputs", ChatBody(R"("structured_outputs":{"regex":"a+"})"), 400,
     "structured_outputs", "not supported yet"},
    {"Echo", ChatBody(R"("echo":true)"), 400, "echo", "echo is not supported yet"},
    {"ContinueFinalMessage", ChatBody(R"("continue_final_message":true)"), 400,
     "continue_final_message", "not supported yet"},
    {"ChatTemplate", ChatBody(R"("chat_template":"{{ messages }}")"), 400, "chat_template",
     "not supported yet"},
    {"MinTokens", ChatBody(R"("min_tokens":5)"), 400, "min_tokens", "not supported yet"},
    {"IncludeStopStrInOutput", ChatBody(R"("include_stop_str_in_output":true)"), 400,
     "include_stop_str_in_output", "not supported yet"},
    {"PromptLogprobs", ChatBody(R"("prompt_logprobs":1)"), 400, "prompt_logprobs",
     "not supported yet"},
    {"UseBeamSearch", ChatBody(R"("use_beam_search":true)"), 400, "use_beam_search",
     "not supported yet"},
};

INSTANTIATE_TEST_SUITE_P(Cases, ChatRejectTest, ::testing::ValuesIn(kChatRejects),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(ChatRequestTest, MinimalBodyTakesTheServerDefaults) {
  const std::string body = R"({"messages":[{"role":"user","content":"Hi"}]})";
  const ParsedRequest r = ChatRequestOf(body);
  EXPECT_EQ(r.kind, ParsedRequest::Kind::kChat);
  EXPECT_EQ(r.model, "gemma-4-e2b");
  EXPECT_EQ(r.messages, nlohmann::json::parse(R"([{"role":"user","content":"Hi"}])"));
  EXPECT_FALSE(r.max_tokens.has_value()) << "chat default: fill the context";
  EXPECT_FLOAT_EQ(r.sampling.temperature, 1.0f);
  EXPECT_EQ(r.sampling.top_k, 64);
  EXPECT_FLOAT_EQ(r.sampling.top_p, 0.95f);
  EXPECT_FLOAT_EQ(r.sampling.min_p, 0.0f);
  EXPECT_FLOAT_EQ(r.sampling.repetition_penalty, 1.0f);
  EXPECT_FALSE(r.sampling.seed.has_value());
  EXPECT_TRUE(r.stop.empty());
  EXPECT_THAT(r.stop_token_ids, ElementsAre(1, 106, 50));
  EXPECT_FALSE(r.stream);
  EXPECT_FALSE(r.include_usage);
  EXPECT_FALSE(r.logprobs);
  EXPECT_EQ(r.top_logprobs, 0);
  EXPECT_FALSE(r.enable_thinking);
  EXPECT_TRUE(r.include_reasoning);
  EXPECT_TRUE(r.add_generation_prompt);
  EXPECT_FALSE(r.ignore_eos);
  EXPECT_TRUE(r.skip_special_tokens);
  EXPECT_FALSE(r.echo);
}

TEST(ChatRequestTest, ModelMayBeOmittedEmptyOrTheServedName) {
  for (const char* model : {R"("model":"")", R"("model":null)", R"("model":"gemma-4-e2b")"}) {
    const std::string body =
        std::string(R"({"messages":[{"role":"user","content":"x"}],)") + model + "}";
    EXPECT_EQ(ChatRequestOf(body).model, "gemma-4-e2b");
  }
}

TEST(ChatRequestTest, MaxCompletionTokensWinsOverMaxTokens) {
  const auto max_tokens = [](const std::string& extra) {
    const std::string body = ChatBody(extra);
    return ChatRequestOf(body).max_tokens;
  };
  EXPECT_EQ(max_tokens(R"("max_tokens":10)"), 10);
  EXPECT_EQ(max_tokens(R"("max_completion_tokens":20)"), 20);
  EXPECT_EQ(max_tokens(R"("max_tokens":10,"max_completion_tokens":20)"), 20);
  EXPECT_EQ(max_tokens(R"("max_completion_tokens":20,"max_tokens":10)"), 20);
  EXPECT_EQ(max_tokens(R"("max_tokens":10,"max_completion_tokens":null)"), 10);
  EXPECT_EQ(max_tokens(R"("max_tokens":32.0)"), 32) << "an integral float is an integer";
  EXPECT_EQ(max_tokens(R"("max_tokens":null)"), std::nullopt);
}

TEST(ChatRequestTest, UnknownAndIgnorableFieldsAreAccepted) {
  const std::string body = ChatBody(
      R"("user":"u-42","metadata":{"k":"v"},"store":false,"service_tier":"auto",)"
      R"("parallel_tool_calls":true,"x_custom_field":{"nested":[1,2,{"a":null}]},)"
      R"("spaces_between_special_tokens":true,"priority":0,"request_id":"abc")");
  ChatRequestOf(body);
}

TEST(ChatRequestTest, UnsupportedFieldsAtTheirNeutralValuesAreAccepted) {
  const std::string body = ChatBody(
      R"("tools":[],"tool_choice":"none","response_format":{"type":"text"},"logit_bias":{},)"
      R"("n":1,"best_of":1,"functions":null,"min_tokens":0,"use_beam_search":false,)"
      R"("echo":false,"guided_json":null,"include_stop_str_in_output":false,"stop":null,)"
      R"("chat_template":"")");
  ChatRequestOf(body);
  const std::string nulls = ChatBody(
      R"("temperature":null,"top_p":null,"top_k":null,"seed":null,"tools":null,)"
      R"("tool_choice":null,"response_format":null,"logit_bias":null,"n":null,)"
      R"("stream":null,"stream_options":null,"max_tokens":null,"logprobs":null,)"
      R"("top_logprobs":null,"reasoning_effort":null,"chat_template_kwargs":null)");
  const ParsedRequest r = ChatRequestOf(nulls);
  EXPECT_EQ(r.sampling.top_k, 64) << "null means the default";
}

TEST(ChatRequestTest, SamplingFieldsOverrideTheDefaults) {
  const std::string body = ChatBody(
      R"("temperature":0.7,"top_p":0.9,"top_k":40,"min_p":0.05,"presence_penalty":0.5,)"
      R"("frequency_penalty":-0.5,"repetition_penalty":1.1,"seed":42)");
  const ParsedRequest r = ChatRequestOf(body);
  EXPECT_FLOAT_EQ(r.sampling.temperature, 0.7f);
  EXPECT_FLOAT_EQ(r.sampling.top_p, 0.9f);
  EXPECT_EQ(r.sampling.top_k, 40);
  EXPECT_FLOAT_EQ(r.sampling.min_p, 0.05f);
  EXPECT_FLOAT_EQ(r.sampling.presence_penalty, 0.5f);
  EXPECT_FLOAT_EQ(r.sampling.frequency_penalty, -0.5f);
  EXPECT_FLOAT_EQ(r.sampling.repetition_penalty, 1.1f);
  ASSERT_TRUE(r.sampling.seed.has_value());
  EXPECT_EQ(*r.sampling.seed, 42u);
  EXPECT_TRUE(r.sampling.Validate().ok());
}

TEST(ChatRequestTest, EdgeValuesOfTheRangesAreAccepted) {
  const std::string body = ChatBody(
      R"("temperature":2,"top_p":1,"min_p":1,"presence_penalty":-2,"frequency_penalty":2)");
  ChatRequestOf(body);
  const std::string zero = ChatBody(R"("temperature":0,"min_p":0)");
  EXPECT_TRUE(ChatRequestOf(zero).sampling.IsGreedy());
}

TEST(ChatRequestTest, TopKMinusOneAndZeroMeanOff) {
  for (const char* k : {"-1", "0"}) {
    const std::string body = ChatBody(std::string(R"("top_k":)") + k);
    EXPECT_EQ(ChatRequestOf(body).sampling.top_k, 0) << k;
  }
  const std::string huge = ChatBody(R"("top_k":100000000000)");
  EXPECT_EQ(ChatRequestOf(huge).sampling.top_k, std::numeric_limits<int>::max());
}

TEST(ChatRequestTest, RepeatPenaltySpellings) {
  const std::string llama = ChatBody(R"("repeat_penalty":1.3)");
  EXPECT_FLOAT_EQ(ChatRequestOf(llama).sampling.repetition_penalty, 1.3f);
  const std::string both = ChatBody(R"("repetition_penalty":1.2,"repeat_penalty":1.3)");
  EXPECT_FLOAT_EQ(ChatRequestOf(both).sampling.repetition_penalty, 1.2f) << "vLLM's spelling wins";
}

TEST(ChatRequestTest, SeedIsAnInt64) {
  const std::string negative = ChatBody(R"("seed":-1)");
  EXPECT_EQ(*ChatRequestOf(negative).sampling.seed, std::numeric_limits<uint64_t>::max());
  const std::string max = ChatBody(R"("seed":9223372036854775807)");
  EXPECT_EQ(*ChatRequestOf(max).sampling.seed, 9223372036854775807ull);
}

TEST(ChatRequestTest, ServerDefaultSeedIsNotInherited) {
  ServerDefaults defaults = GemmaDefaults();
  defaults.sampling.seed = 7;
  const std::string body = ChatBody("");
  EXPECT_FALSE(RequestOf(ParseChatRequest(body, defaults), body).sampling.seed.has_value());
}

TEST(ChatRequestTest, StopStringOrList) {
  const std::string one = ChatBody(R"("stop":"\n\n")");
  EXPECT_THAT(ChatRequestOf(one).stop, ElementsAre("\n\n"));
  const std::string list = ChatBody(R"("stop":["a","","b","c","d","e"])");
  EXPECT_THAT(ChatRequestOf(list).stop, ElementsAre("a", "b", "c", "d", "e"))
      << "no 4-item cap; empty strings dropped";
}

TEST(ChatRequestTest, StopTokenIdsMergeWithTheDefaults) {
  const std::string body = ChatBody(R"("stop_token_ids":[106,7,7],"ignore_eos":true)");
  const ParsedRequest r = ChatRequestOf(body);
  EXPECT_THAT(r.stop_token_ids, ElementsAre(1, 106, 50, 7));
  EXPECT_TRUE(r.ignore_eos);
}

TEST(ChatRequestTest, StreamOptions) {
  const auto parse = [](const std::string& extra) {
    const std::string body = ChatBody(extra);
    return ChatRequestOf(body);
  };
  EXPECT_TRUE(parse(R"("stream":true)").stream);
  EXPECT_FALSE(parse(R"("stream":true)").include_usage);
  EXPECT_TRUE(parse(R"("stream":true,"stream_options":{})").include_usage)
      << "vLLM: include_usage defaults to true once stream_options is given";
  EXPECT_TRUE(parse(R"("stream":true,"stream_options":{"include_usage":true})").include_usage);
  EXPECT_FALSE(parse(R"("stream":true,"stream_options":{"include_usage":false})").include_usage);
  EXPECT_FALSE(parse(R"("stream":false,"stream_options":null)").stream);
}

TEST(ChatRequestTest, NLogitBiasAndStopOnDegenerate) {
  const ParsedRequest plain = ChatRequestOf(ChatBody(R"("temperature":1)"));
  EXPECT_EQ(plain.n, 1);
  EXPECT_TRUE(plain.sampling.logit_bias.empty());
  EXPECT_FALSE(plain.stop_on_degenerate);
  const ParsedRequest r = ChatRequestOf(
      ChatBody(R"("n":16,"logit_bias":{"5":-100,"0":100,"262143":0.5},"stop_on_degenerate":true)"));
  EXPECT_EQ(r.n, 16);
  EXPECT_THAT(r.sampling.logit_bias,
              ::testing::UnorderedElementsAre(std::pair<int32_t, float>{5, -100.0f},
                                              std::pair<int32_t, float>{0, 100.0f},
                                              std::pair<int32_t, float>{262143, 0.5f}));
  EXPECT_TRUE(r.stop_on_degenerate);
  // The server's default (--stop-on-degenerate), which a request may turn off.
  ServerDefaults d = GemmaDefaults();
  d.stop_on_degenerate = true;
  const std::string on = ChatBody(R"("n":2)");
  EXPECT_TRUE(RequestOf(ParseChatRequest(on, d), on).stop_on_degenerate);
  const std::string off = ChatBody(R"("stop_on_degenerate":false)");
  EXPECT_FALSE(RequestOf(ParseChatRequest(off, d), off).stop_on_degenerate);
  // The vocabulary bound, once the model is known.
  EXPECT_FALSE(ValidateLogitBias(r, 262144).has_value());
  const std::optional<ApiError> e = ValidateLogitBias(r, 262143);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->param, "logit_bias");
  EXPECT_THAT(e->message, HasSubstr("logit_bias token id 262143 is outside the vocabulary"));
}

TEST(ChatRequestTest, Logprobs) {
  const std::string body = ChatBody(R"("logprobs":true,"top_logprobs":5)");
  const ParsedRequest r = ChatRequestOf(body);
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.top_logprobs, 5);
  const std::string zero = ChatBody(R"("top_logprobs":0)");
  EXPECT_FALSE(ChatRequestOf(zero).logprobs)
      << "top_logprobs 0 asks for nothing, so logprobs need not be set";
}

TEST(ChatRequestTest, ThinkingSwitches) {
  const auto thinking = [](const std::string& extra) {
    const std::string body = ChatBody(extra);
    return ChatRequestOf(body).enable_thinking;
  };
  EXPECT_FALSE(thinking(""));
  EXPECT_TRUE(thinking(R"("chat_template_kwargs":{"enable_thinking":true})"));
  EXPECT_FALSE(thinking(R"("chat_template_kwargs":{"enable_thinking":false})"));
  EXPECT_TRUE(thinking(R"("reasoning_effort":"high")"));
  EXPECT_TRUE(thinking(R"("reasoning_effort":"low")"));
  EXPECT_FALSE(thinking(R"("reasoning_effort":"none")"));
  EXPECT_FALSE(thinking(
      R"("reasoning_effort":"high","chat_template_kwargs":{"enable_thinking":false})"))
      << "chat_template_kwargs wins over reasoning_effort";
  EXPECT_TRUE(thinking(R"("chat_template_kwargs":{"other":1,"enable_thinking":true})"));
  const std::string body = ChatBody(R"("include_reasoning":false,"add_generation_prompt":false)");
  const ParsedRequest r = ChatRequestOf(body);
  EXPECT_FALSE(r.include_reasoning);
  EXPECT_FALSE(r.add_generation_prompt);
}

TEST(ChatRequestTest, MessageShapesAccepted) {
  const std::string body = R"({"messages":[
      {"role":"system","content":"Be brief."},
      {"role":"developer","content":[{"type":"text","text":"Really brief."}]},
      {"role":"user","content":[{"type":"text","text":"Hi"},{"type":"text","text":" there"}]},
      {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function",
        "function":{"name":"f","arguments":"{}"}}]},
      {"role":"tool","tool_call_id":"c1","content":"42"},
      {"role":"assistant","content":"ok"},
      {"role":"user","content":"", "name":"bob"}]})";
  const ParsedRequest r = ChatRequestOf(body);
  EXPECT_EQ(r.messages.size(), 7u);
  EXPECT_EQ(r.messages[3]["tool_calls"][0]["id"], "c1") << "passed through to RenderChat";
}

TEST(ChatRequestTest, ToolsAndToolChoice) {
  using TC = OutputConstraints::ToolChoice;
  const std::string tools =
      R"("tools":[{"type":"function","function":{"name":"get_weather","parameters":)"
      R"({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}},)"
      R"({"type":"function","function":{"name":"now"}}])";
  const ParsedRequest autop = ChatRequestOf(ChatBody(tools));
  EXPECT_EQ(autop.constraints.tools.size(), 2u);
  EXPECT_EQ(autop.constraints.tool_choice, TC::kAuto) << "tools declared: auto by default";
  ASSERT_NE(autop.constraints.grammar, nullptr);
  EXPECT_TRUE(autop.constraints.grammar_from_tool_call) << "auto: held once the model calls";
  EXPECT_TRUE(autop.constraints.parse_tool_calls());
  EXPECT_TRUE(autop.constraints.parallel_tool_calls);

  const ParsedRequest none = ChatRequestOf(ChatBody(tools + R"(,"tool_choice":"none")"));
  EXPECT_EQ(none.constraints.tool_choice, TC::kNone);
  EXPECT_EQ(none.constraints.grammar, nullptr);
  EXPECT_FALSE(none.constraints.parse_tool_calls()) << "none: markers stay text";

  const ParsedRequest required = ChatRequestOf(
      ChatBody(tools + R"(,"tool_choice":"required","parallel_tool_calls":false)"));
  EXPECT_EQ(required.constraints.tool_choice, TC::kRequired);
  ASSERT_NE(required.constraints.grammar, nullptr);
  EXPECT_FALSE(required.constraints.grammar_from_tool_call) << "forced from the first token";
  EXPECT_FALSE(required.constraints.parallel_tool_calls);

  const ParsedRequest named = ChatRequestOf(
      ChatBody(tools + R"(,"tool_choice":{"type":"function","function":{"name":"now"}})"));
  EXPECT_EQ(named.constraints.tool_choice, TC::kNamed);
  EXPECT_EQ(named.constraints.tool_name, "now");
  ASSERT_NE(named.constraints.grammar, nullptr);

  const ParsedRequest legacy =
      ChatRequestOf(ChatBody(tools + R"(,"function_call":{"name":"now"})"));
  EXPECT_EQ(legacy.constraints.tool_choice, TC::kNamed) << "function_call: the legacy spelling";

  const ParsedRequest no_tools = ChatRequestOf(ChatBody(R"("tool_choice":"auto")"));
  EXPECT_EQ(no_tools.constraints.tool_choice, TC::kNone);
  EXPECT_EQ(no_tools.constraints.grammar, nullptr);
}

TEST(ChatRequestTest, ResponseFormats) {
  using F = OutputConstraints::Format;
  const ParsedRequest text = ChatRequestOf(ChatBody(R"("response_format":{"type":"text"})"));
  EXPECT_EQ(text.constraints.format, F::kText);
  EXPECT_EQ(text.constraints.grammar, nullptr);
  const ParsedRequest object =
      ChatRequestOf(ChatBody(R"("response_format":{"type":"json_object"})"));
  EXPECT_EQ(object.constraints.format, F::kJsonObject);
  EXPECT_NE(object.constraints.grammar, nullptr);
  const ParsedRequest schema = ChatRequestOf(ChatBody(
      R"("response_format":{"type":"json_schema","json_schema":{"name":"p","strict":true,)"
      R"("schema":{"type":"object","properties":{"n":{"type":"integer","minimum":0}},)"
      R"("required":["n"],"additionalProperties":false}}})"));
  EXPECT_EQ(schema.constraints.format, F::kJsonSchema);
  EXPECT_NE(schema.constraints.grammar, nullptr);
  EXPECT_FALSE(schema.constraints.grammar_from_tool_call);
  // With tools in auto, a JSON answer wins: the model writes the object, not a call.
  const ParsedRequest both = ChatRequestOf(ChatBody(
      R"("tools":[{"type":"function","function":{"name":"f"}}],)"
      R"("response_format":{"type":"json_object"})"));
  EXPECT_EQ(both.constraints.format, F::kJsonObject);
  EXPECT_FALSE(both.constraints.parse_tool_calls());
}

TEST(ChatRequestTest, ContextLengthResolution) {
  ParsedRequest chat;
  chat.kind = ParsedRequest::Kind::kChat;
  ApiResult<int> fill = ResolveMaxTokens(chat, 100, 8192);
  ASSERT_TRUE(fill.ok());
  EXPECT_EQ(fill.value(), 8092) << "no max_tokens: the rest of the context";

  ApiResult<int> full = ResolveMaxTokens(chat, 8192, 8192);
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.error().status, 400);
  EXPECT_EQ(full.error().param, "messages");
  EXPECT_EQ(full.error().message,
            "This model's maximum context length is 8192 tokens. However, you requested 8192 "
            "tokens in the messages, Please reduce the length of the messages.");

  chat.max_tokens = 100;
  ApiResult<int> over = ResolveMaxTokens(chat, 8100, 8192);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().param, "max_tokens");
  EXPECT_EQ(over.error().type, "BadRequestError");
  EXPECT_EQ(over.error().message,
            "This model's maximum context length is 8192 tokens. However, you requested 8200 "
            "tokens (8100 in the messages, 100 in the completion). Please reduce the length of "
            "the messages or completion.");
  ApiResult<int> fits = ResolveMaxTokens(chat, 8092, 8192);
  ASSERT_TRUE(fits.ok());
  EXPECT_EQ(fits.value(), 100);

  ParsedRequest completion;
  completion.kind = ParsedRequest::Kind::kCompletion;
  completion.max_tokens = 16;
  ApiResult<int> prompt_too_long = ResolveMaxTokens(completion, 9000, 8192);
  ASSERT_FALSE(prompt_too_long.ok());
  EXPECT_EQ(prompt_too_long.error().param, "prompt");
  EXPECT_THAT(prompt_too_long.error().message, HasSubstr("maximum context length is 8192"));
}

}  // namespace
}  // namespace g4::openai
