// Tests for StreamDecoder: chunks never end inside a character that could still be completed,
// and their concatenation is exactly the one-shot decode.
#include "tokenizer/stream_decoder.h"

#include <gtest/gtest.h>

#include <random>

#include "tokenizer/test_util.h"
#include "tokenizer/utf8.h"

namespace g4 {
namespace {

std::unique_ptr<Tokenizer> MakeSmall() {
  auto t = Tokenizer::FromJsonText(
      tokenizer_test::MakeTokenizerJson({"a", "\u2581", "\u2581a"}, {{"\u2581", "a"}},
                                        {{"<bos>", true}, {"<|channel>", true}}),
      "test");
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return std::move(t).value();
}

TEST(StreamDecoderTest, HoldsBackSplitCharacters) {
  auto t = MakeSmall();
  StreamDecoder d(*t, DecodeOptions{});
  // "😊" arrives as four byte tokens.
  EXPECT_EQ(*d.Push(t->TokenId("a")), "a");
  EXPECT_EQ(*d.Push(0xF0), "");
  EXPECT_EQ(*d.Push(0x9F), "");
  EXPECT_EQ(*d.Push(0x98), "");
  EXPECT_EQ(d.pending(), 3u);
  EXPECT_EQ(*d.Push(0x8A), "😊");
  EXPECT_EQ(*d.Push(t->TokenId("\u2581a")), " a");
  EXPECT_EQ(d.Finish(), "");
}

TEST(StreamDecoderTest, NeverLosesBytes) {
  auto t = MakeSmall();
  StreamDecoder d(*t, DecodeOptions{});
  std::string out = *d.Push(0xE2);  // never completed: a stray 0xFF follows
  out += *d.Push(0xFF);
  out += *d.Push(0xE2);
  out += *d.Push(0x96);  // the stream ends inside a character
  out += d.Finish();
  EXPECT_EQ(out, "\xE2\xFF\xE2\x96");
}

TEST(StreamDecoderTest, BadIdIsAnErrorAndChangesNothing) {
  auto t = MakeSmall();
  StreamDecoder d(*t, DecodeOptions{});
  EXPECT_EQ(*d.Push(0xC3), "");
  EXPECT_FALSE(d.Push(t->vocab_size() + 5).ok());
  EXPECT_EQ(*d.Push(0xA9), "é");
}

TEST(StreamDecoderTest, ConcatenationEqualsDecodeOnRandomStreams) {
  auto t = MakeSmall();
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<int32_t> ids;
    const int n = static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) ids.push_back(static_cast<int32_t>(rng() % t->vocab_size()));
    for (bool skip : {false, true}) {
      DecodeOptions o;
      o.skip_special = skip;
      StreamDecoder d(*t, o);
      std::string streamed;
      std::vector<size_t> cuts;
      for (int32_t id : ids) {
        streamed += *d.Push(id);
        cuts.push_back(streamed.size());
      }
      streamed += d.Finish();
      // No cut falls strictly inside a valid character of the whole text.
      std::vector<bool> inside(streamed.size() + 1, false);
      for (size_t i = 0; i < streamed.size();) {
        const size_t n = utf8::DecodeOne(std::string_view(streamed).substr(i));
        for (size_t k = 1; k < n; ++k) inside[i + k] = true;
        i += n ? n : 1;
      }
      for (size_t c : cuts) EXPECT_FALSE(inside[c]) << "cut at " << c;
      EXPECT_EQ(streamed, *t->Decode(ids, o));
    }
  }
}

}  // namespace
}  // namespace g4
