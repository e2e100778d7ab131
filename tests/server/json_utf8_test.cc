// Ill-formed UTF-8 in a request body: the first bad byte is found, the field holding it is
// named (nested objects, array indices, keys), and the parse path answers a 400 naming it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "server/openai/field_reader.h"
#include "server/openai/json_utf8.h"
#include "server/openai/request.h"
#include "server/request_test_util.h"

namespace g4::openai {
namespace {

using ::testing::HasSubstr;

TEST(JsonUtf8Test, FirstInvalidByte) {
  EXPECT_EQ(FirstInvalidUtf8(""), std::nullopt);
  EXPECT_EQ(FirstInvalidUtf8("plain ascii"), std::nullopt);
  EXPECT_EQ(FirstInvalidUtf8("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"), std::nullopt);
  EXPECT_EQ(FirstInvalidUtf8("ab\xFF"), 2u);
  EXPECT_EQ(FirstInvalidUtf8("a\xC3\x28"), 1u);          // bad continuation
  EXPECT_EQ(FirstInvalidUtf8("ab\xE2\x82"), 2u);          // truncated at the end
  EXPECT_EQ(FirstInvalidUtf8("\xC0\xAF"), 0u);            // overlong
  EXPECT_EQ(FirstInvalidUtf8("x\xED\xA0\x80"), 1u);       // surrogate
  EXPECT_EQ(FirstInvalidUtf8("\xC3\xA9\xF4\x90\x80\x80"), 2u);  // above U+10FFFF
}

TEST(JsonUtf8Test, NamesTheFieldHoldingTheBadBytes) {
  EXPECT_EQ(FindUtf8Fault(R"({"prompt":"fine"})"), std::nullopt);
  auto f = FindUtf8Fault("{\"prompt\":\"a\xFF\"}");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->path, "prompt");
  EXPECT_EQ(f->offset, 12u);
  EXPECT_FALSE(f->in_key);

  f = FindUtf8Fault("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"ok\"},"
                    "{\"role\":\"user\",\"content\":\"x\\\"y, \xC3\x28\"}]}");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->path, "messages[1].content");

  f = FindUtf8Fault("{\"a\":{\"b\":[1,[2,\"\xFF\"]]}}");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->path, "a.b[1][1]");

  f = FindUtf8Fault("{\"messages\":[{\"ro\xFFle\":\"user\"}]}");
  ASSERT_TRUE(f);
  EXPECT_TRUE(f->in_key);
  EXPECT_EQ(f->path, "messages[0]");

  f = FindUtf8Fault("\xFF{}");  // outside any string
  ASSERT_TRUE(f);
  EXPECT_EQ(f->path, "");
}

TEST(JsonUtf8Test, RequestParsingAnswers400NamingTheField) {
  const std::string body =
      "{\"messages\":[{\"role\":\"user\",\"content\":\"hi \xE2\x28\xA1\"}],\"max_tokens\":2}";
  auto r = ParseChatRequest(body, testing::GemmaDefaults());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().status, 400);
  EXPECT_EQ(r.error().param, "messages[0].content");
  EXPECT_THAT(r.error().message, HasSubstr("Invalid UTF-8 in `messages[0].content`"));
  // The error itself serialises (its message holds only the valid path).
  EXPECT_THAT(ToJsonString(r.error()), HasSubstr("messages[0].content"));

  auto c = ParseCompletionRequest("{\"prompt\":\"\xC3\x28\"}", testing::GemmaDefaults());
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().param, "prompt");
  auto raw = ParseJsonObject("\xFF\xFE");
  ASSERT_FALSE(raw.ok());
  EXPECT_THAT(raw.error().message, HasSubstr("not valid UTF-8"));
}

}  // namespace
}  // namespace g4::openai
