// Tests for ParseTokenizeRequest and ParseDetokenizeRequest: vLLM's prompt and chat forms,
// llama.cpp's "content" spelling, and the 400/404 answers.
#include "server/openai/tokenize_request.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "server/request_test_util.h"

namespace g4::openai {
namespace {

using ::g4::openai::testing::GemmaDefaults;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(TokenizeRequestTest, PromptForm) {
  ApiResult<TokenizeRequest> r =
      ParseTokenizeRequest(R"({"model":"gemma-4-e2b","prompt":"Hello"})", GemmaDefaults());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(r.value().is_chat);
  EXPECT_EQ(r.value().prompt, "Hello");
  EXPECT_TRUE(r.value().add_special_tokens);
  EXPECT_FALSE(r.value().return_token_strs);
}

TEST(TokenizeRequestTest, LlamaCppContentSpelling) {
  ApiResult<TokenizeRequest> r = ParseTokenizeRequest(
      R"({"content":"Hello","add_special_tokens":false,"return_token_strs":true})",
      GemmaDefaults());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value().prompt, "Hello");
  EXPECT_FALSE(r.value().add_special_tokens);
  EXPECT_TRUE(r.value().return_token_strs);
}

TEST(TokenizeRequestTest, ChatForm) {
  ApiResult<TokenizeRequest> r = ParseTokenizeRequest(
      R"({"messages":[{"role":"user","content":"Hi"}],"add_generation_prompt":false,)"
      R"("chat_template_kwargs":{"enable_thinking":true}})",
      GemmaDefaults());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r.value().is_chat);
  EXPECT_EQ(r.value().messages.size(), 1u);
  EXPECT_FALSE(r.value().add_generation_prompt);
  EXPECT_TRUE(r.value().enable_thinking);
  EXPECT_FALSE(r.value().add_special_tokens) << "the template already writes <bos>";
}

TEST(TokenizeRequestTest, Rejections) {
  const struct {
    const char* body;
    int status;
    const char* param;
    const char* message;
  } cases[] = {
      {"{", 400, "", "parse error"},
      {"[]", 400, "", "must be a JSON object"},
      {R"({})", 400, "prompt", "prompt or messages is required"},
      {R"({"prompt":5})", 400, "prompt", "prompt must be a string"},
      {R"({"model":"other","prompt":"x"})", 404, "model", "The model `other` does not exist."},
      {R"({"messages":[]})", 400, "messages", "must not be empty"},
      {R"({"prompt":"x","return_token_strs":"yes"})", 400, "return_token_strs",
       "must be a boolean"},
  };
  for (const auto& c : cases) {
    ApiResult<TokenizeRequest> r = ParseTokenizeRequest(c.body, GemmaDefaults());
    ASSERT_FALSE(r.ok()) << c.body;
    EXPECT_EQ(r.error().status, c.status) << c.body;
    EXPECT_EQ(r.error().param, c.param) << c.body;
    EXPECT_THAT(r.error().message, HasSubstr(c.message)) << c.body;
  }
}

TEST(DetokenizeRequestTest, TokensAndRejections) {
  ApiResult<DetokenizeRequest> r =
      ParseDetokenizeRequest(R"({"model":"gemma-4-e2b","tokens":[2,17,33]})", GemmaDefaults());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_THAT(r.value().tokens, ElementsAre(2, 17, 33));
  for (const char* body : {R"({})", R"({"tokens":"2"})", R"({"tokens":[-1]})",
                           R"({"tokens":[1.5]})", R"({"tokens":[4294967296]})"}) {
    ApiResult<DetokenizeRequest> bad = ParseDetokenizeRequest(body, GemmaDefaults());
    ASSERT_FALSE(bad.ok()) << body;
    EXPECT_EQ(bad.error().status, 400) << body;
    EXPECT_EQ(bad.error().param, "tokens") << body;
  }
  ApiResult<DetokenizeRequest> model =
      ParseDetokenizeRequest(R"({"model":"x","tokens":[]})", GemmaDefaults());
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.error().status, 404);
}

}  // namespace
}  // namespace g4::openai
