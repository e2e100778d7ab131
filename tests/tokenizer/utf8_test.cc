// Tests for the strict UTF-8 helpers (the one UTF-8 module: the tokenizer, the server and the
// tools use it): what counts as one character, validation against the Unicode table of
// well-formed sequences, U+FFFD replacement per maximal ill-formed subpart, and the streaming
// hold-back of an incomplete trailing character.
#include "tokenizer/utf8.h"

#include <gtest/gtest.h>

#include <string>

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

TEST(Utf8Test, SanitizeReplacesEachMaximalIllFormedSubpart) {
  const std::string kReplacement = "\xEF\xBF\xBD";
  EXPECT_EQ(utf8::Sanitize("ok ▁"), "ok ▁");
  EXPECT_EQ(utf8::Sanitize("a\xFF" "b"), "a" + kReplacement + "b");
  // A truncated 3-byte sequence is one subpart: one replacement.
  EXPECT_EQ(utf8::Sanitize("\xE2\x82" "x"), kReplacement + "x");
  EXPECT_EQ(utf8::Sanitize("\xC3"), kReplacement);
  EXPECT_EQ(utf8::Sanitize("\x80\x80"), kReplacement + kReplacement);
  // A lead whose second byte is out of its row: the lead alone, then the byte on its own.
  EXPECT_EQ(utf8::Sanitize("\xE0\x80\xAF"), kReplacement + kReplacement + kReplacement);
  EXPECT_EQ(utf8::Sanitize("\xF0\x9F\x98" "A"), kReplacement + "A");
  const std::string emoji = "\xF0\x9F\x98\x80";
  EXPECT_EQ(utf8::Sanitize(emoji), emoji);
  EXPECT_TRUE(utf8::IsValid(utf8::Sanitize("\xF0\x9F\x98 \xED\xA0\x80 \xC0\xAF")));
  EXPECT_EQ(utf8::IllFormedLength("\xF0\x9F\x98" "A"), 3u);
  EXPECT_EQ(utf8::IllFormedLength("\xED\xA0\x80"), 1u);  // a surrogate's second byte is out
}

TEST(Utf8Test, ValidityAndTheHoldBackOfAnIncompleteTail) {
  EXPECT_TRUE(utf8::IsValid(""));
  EXPECT_TRUE(utf8::IsValid("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"));  // é € 😀
  EXPECT_FALSE(utf8::IsValid("\xC3"));          // truncated
  EXPECT_FALSE(utf8::IsValid("\xC0\xAF"));      // overlong
  EXPECT_FALSE(utf8::IsValid("\xED\xA0\x80"));  // surrogate
  const std::string emoji = "\xF0\x9F\x98\x80";
  for (size_t cut = 1; cut < emoji.size(); ++cut) {
    EXPECT_EQ(utf8::CompletePrefix("ab" + emoji.substr(0, cut)), 2u) << "cut " << cut;
  }
  EXPECT_EQ(utf8::CompletePrefix("ab" + emoji), 6u);
  EXPECT_EQ(utf8::CompletePrefix("a\xC3" "b"), 3u);  // can never complete: not held back
}

}  // namespace
}  // namespace g4
