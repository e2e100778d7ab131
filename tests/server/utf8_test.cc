// Tests for the UTF-8 helpers: validation against the Unicode table of well-formed sequences,
// U+FFFD replacement per maximal ill-formed subpart, and the streaming hold-back of an
// incomplete trailing character.
#include "server/openai/utf8.h"

#include <gtest/gtest.h>

#include <string>

namespace g4::openai {
namespace {

constexpr const char* kReplacement = "\xEF\xBF\xBD";

TEST(Utf8Test, Validity) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("plain ascii"));
  EXPECT_TRUE(IsValidUtf8("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"));  // é € 😀
  EXPECT_FALSE(IsValidUtf8("\xC3"));              // truncated
  EXPECT_FALSE(IsValidUtf8("\x80"));              // lone continuation
  EXPECT_FALSE(IsValidUtf8("\xC0\xAF"));          // overlong
  EXPECT_FALSE(IsValidUtf8("\xE0\x80\xAF"));      // overlong
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));      // surrogate
  EXPECT_FALSE(IsValidUtf8("\xF4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xFF"));
}

TEST(Utf8Test, SanitizeReplacesEachIllFormedSubpart) {
  EXPECT_EQ(SanitizeUtf8("ok"), "ok");
  EXPECT_EQ(SanitizeUtf8("a\xFF" "b"), std::string("a") + kReplacement + "b");
  // A truncated 3-byte sequence is one subpart: one replacement.
  EXPECT_EQ(SanitizeUtf8("\xE2\x82" "x"), std::string(kReplacement) + "x");
  EXPECT_EQ(SanitizeUtf8("\xC3"), kReplacement);
  EXPECT_EQ(SanitizeUtf8("\x80\x80"), std::string(kReplacement) + kReplacement);
  const std::string emoji = "\xF0\x9F\x98\x80";
  EXPECT_EQ(SanitizeUtf8(emoji), emoji);
  EXPECT_TRUE(IsValidUtf8(SanitizeUtf8("\xF0\x9F\x98 \xED\xA0\x80 \xC0\xAF")));
}

TEST(Utf8Test, CompletePrefixHoldsBackAnIncompleteTail) {
  const std::string emoji = "\xF0\x9F\x98\x80";
  for (size_t cut = 1; cut < emoji.size(); ++cut) {
    const std::string text = "ab" + emoji.substr(0, cut);
    EXPECT_EQ(CompleteUtf8PrefixLength(text), 2u) << "cut " << cut;
  }
  EXPECT_EQ(CompleteUtf8PrefixLength("ab" + emoji), 6u);
  EXPECT_EQ(CompleteUtf8PrefixLength("caf\xC3"), 3u);
  EXPECT_EQ(CompleteUtf8PrefixLength("caf\xC3\xA9"), 5u);
  EXPECT_EQ(CompleteUtf8PrefixLength(""), 0u);
  // Invalid bytes can never complete: not held back.
  EXPECT_EQ(CompleteUtf8PrefixLength("a\xFF"), 2u);
  EXPECT_EQ(CompleteUtf8PrefixLength("a\xC3" "b"), 3u);
}

}  // namespace
}  // namespace g4::openai
