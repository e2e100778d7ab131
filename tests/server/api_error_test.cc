// Tests for ApiError: vLLM's error shape and key order, the type name per status, the
// context-length messages clients match on, Status mapping, and invalid UTF-8 in a message.
#include "server/openai/api_error.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace g4::openai {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> Keys(const nlohmann::ordered_json& object) {
  std::vector<std::string> keys;
  for (auto it = object.begin(); it != object.end(); ++it) keys.push_back(it.key());
  return keys;
}

TEST(ApiErrorTest, BadRequestShapeAndKeyOrder) {
  const nlohmann::ordered_json j =
      ToJson(BadRequest("temperature must be in [0, 2]", "temperature"));
  EXPECT_THAT(Keys(j), ElementsAre("error"));
  EXPECT_THAT(Keys(j["error"]), ElementsAre("message", "type", "param", "code"));
  EXPECT_EQ(j["error"]["message"], "temperature must be in [0, 2]");
  EXPECT_EQ(j["error"]["type"], "BadRequestError");
  EXPECT_EQ(j["error"]["param"], "temperature");
  EXPECT_TRUE(j["error"]["code"].is_number_integer());
  EXPECT_EQ(j["error"]["code"], 400);
  EXPECT_EQ(ToJsonString(BadRequest("x")),
            R"({"error":{"message":"x","type":"BadRequestError","param":null,"code":400}})");
}

TEST(ApiErrorTest, BuildersUseTheClientExceptionNames) {
  const struct {
    ApiError error;
    int status;
    const char* type;
  } cases[] = {
      {BadRequest("m"), 400, "BadRequestError"},
      {Unauthorized(), 401, "AuthenticationError"},
      {NotFound("m"), 404, "NotFoundError"},
      {ModelNotFound("gpt-4"), 404, "NotFoundError"},
      {PayloadTooLarge(1 << 20), 413, "RequestEntityTooLargeError"},
      {Unavailable("queue full"), 503, "ServiceUnavailableError"},
      {Internal("bug"), 500, "InternalServerError"},
      {MakeError(429, "slow down"), 429, "RateLimitError"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(c.error.status, c.status);
    EXPECT_EQ(c.error.type, c.type);
    EXPECT_EQ(ToJson(c.error)["error"]["code"], c.status);
  }
  EXPECT_EQ(ModelNotFound("gpt-4").message, "The model `gpt-4` does not exist.");
  EXPECT_EQ(ModelNotFound("gpt-4").param, "model");
  EXPECT_THAT(PayloadTooLarge(1048576).message, HasSubstr("1048576 bytes"));
}

TEST(ApiErrorTest, CodeOverrideIsAString) {
  ApiError e = BadRequest("too long", "messages");
  e.code_override = "context_length_exceeded";
  EXPECT_EQ(ToJson(e)["error"]["code"], "context_length_exceeded");
}

TEST(ApiErrorTest, ContextLengthMessagesAreVllms) {
  const ApiError both = ContextLengthExceeded(4096, 4000, 200, "max_tokens");
  EXPECT_EQ(both.status, 400);
  EXPECT_EQ(both.type, "BadRequestError");
  EXPECT_EQ(both.param, "max_tokens");
  EXPECT_EQ(both.message,
            "This model's maximum context length is 4096 tokens. However, you requested 4200 "
            "tokens (4000 in the messages, 200 in the completion). Please reduce the length of "
            "the messages or completion.");
  const ApiError prompt_only = ContextLengthExceeded(4096, 5000, std::nullopt, "messages");
  EXPECT_EQ(prompt_only.message,
            "This model's maximum context length is 4096 tokens. However, you requested 5000 "
            "tokens in the messages, Please reduce the length of the messages.");
}

TEST(ApiErrorTest, FromStatus) {
  EXPECT_EQ(FromStatus(InvalidArgument("bad message")).status, 400);
  EXPECT_EQ(FromStatus(Unimplemented("no MoE")).status, 400);
  EXPECT_EQ(FromStatus(g4::FailedPrecondition("no chat template")).status, 400);
  EXPECT_EQ(FromStatus(g4::NotFound("gone")).status, 404);
  EXPECT_EQ(FromStatus(g4::Internal("bug")).status, 500);
  EXPECT_EQ(FromStatus(IoError("disk")).status, 500);
  EXPECT_EQ(FromStatus(InvalidArgument("m"), "messages").param, "messages");
  EXPECT_EQ(FromStatus(InvalidArgument("bad message")).message, "bad message");
}

TEST(ApiErrorTest, InvalidUtf8InAMessageIsReplacedNotThrown) {
  const ApiError e = BadRequest("last read: '\xff\xfe\xc3'", "messages");
  std::string dumped;
  ASSERT_NO_THROW(dumped = ToJsonString(e));
  EXPECT_THAT(dumped, HasSubstr("\xEF\xBF\xBD"));
  // ToJson already holds valid UTF-8, so even a strict dump() does not throw.
  EXPECT_NO_THROW((void)ToJson(e).dump());
}

TEST(ApiResultTest, HoldsAValueOrAnError) {
  ApiResult<int> ok = 5;
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok.value(), 5);
  ApiResult<int> bad = BadRequest("no");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().status, 400);
}

}  // namespace
}  // namespace g4::openai
