// Tests for the strict UTF-8 helpers: what counts as one character, and the streaming boundary.
#include "tokenizer/utf8.h"

#include <gtest/gtest.h>

namespace g4 {
namespace {

TEST(Utf8Test, DecodesValidSequences) {
  uint32_t cp = 0;
  EXPECT_EQ(utf8::DecodeOne("A", &cp), 1u);
  EXPECT_EQ(cp, 0x41u);
  EXPECT_EQ(utf8::DecodeOne("\xC3\xA9", &cp), 2u);  // é
  EXPECT_EQ(cp, 0xE9u);
  EXPECT_EQ(utf8::DecodeOne("\xE2\x96\x81", &cp), 3u);  // ▁
  EXPECT_EQ(cp, 0x2581u);
  EXPECT_EQ(utf8::DecodeOne("\xF0\x9F\x98\x8A", &cp), 4u);  // 😊
  EXPECT_EQ(cp, 0x1F60Au);
  EXPECT_EQ(utf8::DecodeOne("\xF4\x8F\xBF\xBF", &cp), 4u);  // U+10FFFF
  EXPECT_EQ(cp, 0x10FFFFu);
}

TEST(Utf8Test, RejectsInvalidSequences) {
  EXPECT_EQ(utf8::DecodeOne(""), 0u);
  EXPECT_EQ(utf8::DecodeOne("\x80"), 0u);              // lone continuation
  EXPECT_EQ(utf8::DecodeOne("\xC0\x80"), 0u);          // overlong NUL
  EXPECT_EQ(utf8::DecodeOne("\xE0\x80\x80"), 0u);      // overlong
  EXPECT_EQ(utf8::DecodeOne("\xED\xA0\x80"), 0u);      // surrogate U+D800
  EXPECT_EQ(utf8::DecodeOne("\xF4\x90\x80\x80"), 0u);  // > U+10FFFF
  EXPECT_EQ(utf8::DecodeOne("\xFF"), 0u);
  EXPECT_EQ(utf8::DecodeOne("\xE2\x96"), 0u);  // truncated
  EXPECT_EQ(utf8::DecodeOne("\xE2" "A"), 0u);
  EXPECT_FALSE(utf8::IsValid("ab\xFF"));
  EXPECT_TRUE(utf8::IsValid("naïve 😊"));
}

TEST(Utf8Test, CompletePrefixHoldsBackOnlyCompletableTails) {
  EXPECT_EQ(utf8::CompletePrefix("abc"), 3u);
  EXPECT_EQ(utf8::CompletePrefix("ab\xE2"), 2u);          // could become ▁
  EXPECT_EQ(utf8::CompletePrefix("ab\xE2\x96"), 2u);
  EXPECT_EQ(utf8::CompletePrefix("ab\xE2\x96\x81"), 5u);  // complete
  EXPECT_EQ(utf8::CompletePrefix("\xF0\x9F\x98"), 0u);
  EXPECT_EQ(utf8::CompletePrefix("ab\xFF"), 3u);          // never valid: pass it on
  EXPECT_EQ(utf8::CompletePrefix("ab\x80"), 3u);
  EXPECT_EQ(utf8::CompletePrefix("ab\xE2" "A"), 4u);      // broken already
  EXPECT_EQ(utf8::CompletePrefix("ab\xED\xA0"), 4u);      // would be a surrogate
  EXPECT_EQ(utf8::CompletePrefix(""), 0u);
}

TEST(Utf8Test, SanitizeReplacesInvalidBytes) {
  EXPECT_EQ(utf8::Sanitize("a\xFF" "b"), "a\xEF\xBF\xBD" "b");
  EXPECT_EQ(utf8::Sanitize("ok ▁"), "ok ▁");
}

}  // namespace
}  // namespace g4
