// Tests for ParseCompletionRequest: the prompt shapes of server-api.md §3 (one prompt only),
// the default max_tokens of 16, completions' integer `logprobs`, echo, and the rejected fields.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "server/openai/request.h"
#include "server/request_test_util.h"

namespace g4::openai {
namespace {

using ::g4::openai::testing::CompletionBody;
using ::g4::openai::testing::CompletionRequestOf;
using ::g4::openai::testing::ExpectRejected;
using ::g4::openai::testing::GemmaDefaults;
using ::g4::openai::testing::RejectCase;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class CompletionRejectTest : public ::testing::TestWithParam<RejectCase> {};

TEST_P(CompletionRejectTest, AnswersWithTheStatusParamAndMessage) {
  const RejectCase& c = GetParam();
  ExpectRejected(ParseCompletionRequest(c.body, GemmaDefaults()), c);
}

const RejectCase kCompletionRejects[] = {
    {"MalformedJson", R"({"prompt": "x",})", 400, "", "parse error at line 1, column"},
    {"BodyIsNumber", "42", 400, "", "must be a JSON object, got an integer"},
    {"UnknownModel", R"({"model":"text-davinci-003","prompt":"x"})", 404, "model",
     "The model `text-davinci-003` does not exist."},
    {"PromptMissing", R"({"model":"gemma-4-e2b"})", 400, "prompt", "prompt is required"},
    {"PromptNumber", R"({"prompt":5})", 400, "prompt", "prompt must be a string, an array"},
    {"PromptObject", R"({"prompt":{"text":"x"}})", 400, "prompt", "got an object"},
    {"PromptEmptyList", R"({"prompt":[]})", 400, "prompt", "prompt must not be empty"},
    {"PromptEmptyIdList", R"({"prompt":[[]]})", 400, "prompt", "prompt must not be empty"},
    {"TwoPrompts", R"({"prompt":["a","b"]})", 400, "prompt",
     "a list of 2 prompts is not supported yet"},
    {"TwoIdPrompts", R"({"prompt":[[1,2],[3]]})", 400, "prompt",
     "a list of 2 prompts is not supported yet"},
    {"NegativeId", R"({"prompt":[1,-2]})", 400, "prompt", "non-negative integers, got -2"},
    {"IdPastInt32", R"({"prompt":[3000000000]})", 400, "prompt", "non-negative integers"},
    {"FractionalId", R"({"prompt":[1.5]})", 400, "prompt", "non-negative integers, got 1.5"},
    {"MixedIdsAndText", R"({"prompt":[1,"a"]})", 400, "prompt", "non-negative integers"},
    {"MixedTextAndIds", R"({"prompt":["a",1]})", 400, "prompt", "prompt must be a string"},
    {"MixedListAndText", R"({"prompt":[[1],"a"]})", 400, "prompt", "prompt must be a string"},
    {"NestedText", R"({"prompt":[["a"]]})", 400, "prompt", "non-negative integers"},
    {"Suffix", CompletionBody(R"("suffix":" the end")"), 400, "suffix",
     "suffix is not supported yet"},
    {"BestOf", CompletionBody(R"("best_of":3)"), 400, "best_of", "best_of > 1 is not supported"},
    {"BestOfZero", CompletionBody(R"("best_of":0)"), 400, "best_of", "at least 1"},
    {"NHundred", CompletionBody(R"("n":100)"), 400, "n", "n must be in [1, 16], got 100"},
    {"EchoString", CompletionBody(R"("echo":"no")"), 400, "echo", "echo must be a boolean"},
    {"LogprobsBool", CompletionBody(R"("logprobs":true)"), 400, "logprobs",
     "logprobs must be an integer, got a boolean"},
    {"LogprobsAboveTwenty", CompletionBody(R"("logprobs":21)"), 400, "logprobs",
     "logprobs must be in [0, 20], got 21"},
    {"LogprobsNegative", CompletionBody(R"("logprobs":-1)"), 400, "logprobs", "in [0, 20]"},
    {"MaxTokensZero", CompletionBody(R"("max_tokens":0)"), 400, "max_tokens",
     "max_tokens must be at least 1"},
    {"Temperature", CompletionBody(R"("temperature":3)"), 400, "temperature",
     "temperature must be in [0, 2], got 3"},
    {"StreamOptionsWithoutStream", CompletionBody(R"("stream_options":{})"), 400,
     "stream_options", "Stream options can only be defined when `stream=True`."},
    {"ResponseFormatUnsupportedKeyword",
     CompletionBody(R"("response_format":{"type":"json_schema","json_schema":{"name":"x",)"
                    R"("schema":{"type":"array","uniqueItems":true}}})"),
     400, "response_format", "uniqueItems"},
    {"LogitBiasTooHigh", CompletionBody(R"("logit_bias":{"1":101})"), 400, "logit_bias",
     "in [-100, 100]"},
    {"GuidedRegex", CompletionBody(R"("guided_regex":"a+")"), 400, "guided_regex",
     "not supported yet"},
};

INSTANTIATE_TEST_SUITE_P(Cases, CompletionRejectTest, ::testing::ValuesIn(kCompletionRejects),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(CompletionRequestTest, DefaultMaxTokensIsSixteen) {
  const std::string body = R"({"prompt":"Once"})";
  const ParsedRequest r = CompletionRequestOf(body);
  EXPECT_EQ(r.kind, ParsedRequest::Kind::kCompletion);
  EXPECT_EQ(r.model, "gemma-4-e2b");
  EXPECT_EQ(r.max_tokens, 16);
  EXPECT_EQ(r.prompt_text, "Once");
  EXPECT_FALSE(r.prompt_is_ids);
  EXPECT_FALSE(r.echo);
  EXPECT_FALSE(r.logprobs);
  EXPECT_EQ(r.sampling.top_k, 64);
  EXPECT_THAT(r.stop_token_ids, ElementsAre(1, 106, 50));
}

TEST(CompletionRequestTest, MaxTokensAndMaxCompletionTokens) {
  const auto max_tokens = [](const std::string& extra) {
    const std::string body = CompletionBody(extra);
    return CompletionRequestOf(body).max_tokens;
  };
  EXPECT_EQ(max_tokens(R"("max_tokens":100)"), 100);
  EXPECT_EQ(max_tokens(R"("max_tokens":100,"max_completion_tokens":7)"), 7);
  EXPECT_EQ(max_tokens(R"("max_tokens":null)"), 16);
}

TEST(CompletionRequestTest, PromptShapes) {
  const auto parse = [](const std::string& prompt) {
    const std::string body = R"({"prompt":)" + prompt + "}";
    return CompletionRequestOf(body);
  };
  EXPECT_EQ(parse(R"("")").prompt_text, "") << "an empty text prompt still gets <bos>";
  EXPECT_EQ(parse(R"(["one string"])").prompt_text, "one string");
  const ParsedRequest ids = parse("[2, 17, 33]");
  EXPECT_TRUE(ids.prompt_is_ids);
  EXPECT_THAT(ids.prompt_ids, ElementsAre(2, 17, 33));
  const ParsedRequest nested = parse("[[2, 17.0, 2147483647]]");
  EXPECT_TRUE(nested.prompt_is_ids);
  EXPECT_THAT(nested.prompt_ids, ElementsAre(2, 17, 2147483647));
}

TEST(CompletionRequestTest, LogprobsIsTheNumberOfAlternatives) {
  const std::string zero = CompletionBody(R"("logprobs":0)");
  const ParsedRequest r0 = CompletionRequestOf(zero);
  EXPECT_TRUE(r0.logprobs);
  EXPECT_EQ(r0.top_logprobs, 0);
  const std::string five = CompletionBody(R"("logprobs":5,"echo":true)");
  const ParsedRequest r5 = CompletionRequestOf(five);
  EXPECT_TRUE(r5.logprobs);
  EXPECT_EQ(r5.top_logprobs, 5);
  EXPECT_TRUE(r5.echo);
}

TEST(CompletionRequestTest, ChatOnlyFieldsAreUnknownHere) {
  // tools/echo etc. mean nothing to /v1/completions in vLLM either: ignored as unknown keys.
  const std::string body = CompletionBody(
      R"("messages":"not checked","tools":[{"x":1}],"chat_template_kwargs":5,"user":"u")");
  CompletionRequestOf(body);
}

TEST(CompletionRequestTest, StreamingAndStops) {
  const std::string body = CompletionBody(
      R"("stream":true,"stream_options":{"include_usage":true},"stop":["\n"],"ignore_eos":true,)"
      R"("skip_special_tokens":false,"suffix":"","best_of":1)");
  const ParsedRequest r = CompletionRequestOf(body);
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_THAT(r.stop, ElementsAre("\n"));
  EXPECT_TRUE(r.ignore_eos);
  EXPECT_FALSE(r.skip_special_tokens);
}

TEST(CompletionRequestTest, PromptIdsAgainstTheVocabulary) {
  const std::string body = R"({"prompt":[2, 262143, 262144]})";
  const ParsedRequest r = CompletionRequestOf(body);
  const std::optional<ApiError> e = ValidatePromptIds(r, 262144);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->status, 400);
  EXPECT_EQ(e->param, "prompt");
  EXPECT_THAT(e->message, HasSubstr("262144 is outside the vocabulary [0, 262144)"));
  EXPECT_FALSE(ValidatePromptIds(r, 262145).has_value());
  const std::string text = CompletionBody("");
  EXPECT_FALSE(ValidatePromptIds(CompletionRequestOf(text), 1));
}

}  // namespace
}  // namespace g4::openai
