// Token masks: FillMask equals brute force (every token tried from scratch) in many states, on a
// tiny hand-made vocabulary and on Gemma 4's real one.
#include <gtest/gtest.h>

#include <chrono>

#include "runtime/grammar/grammar.h"
#include "runtime/grammar/grammar_test_util.h"
#include "runtime/grammar/vocab_test_util.h"

namespace g4::grammar {
namespace {

using nlohmann::json;
using test::ExpectMaskMatchesBruteForce;
using test::MustCompile;

const char* kPersonSchema = R"({"type":"object","properties":{
    "age":{"type":"integer","minimum":0,"maximum":150},
    "name":{"type":"string","maxLength":40},
    "note":{"type":"string"},
    "tags":{"type":"array","items":{"type":"string","maxLength":3},"maxItems":3}},
    "required":["age","name"]})";

const char* kPersonPrefixes[] = {
    "", "{", "{\"", "{\"ag", "{\"age\"", "{\"age\": ", "{\"age\":1", "{\"age\":15", "{\"age\":150",
    "{\"age\":150,", "{\"age\":150,\"name\":\"", "{\"age\":150,\"name\":\"ab",
    "{\"age\":150,\"name\":\"a\\", "{\"age\":150,\"name\":\"a\\u00", "{\"age\":150,\"name\":\"\xC3",
    "{\"age\":1,\"name\":\"x\",\"tags\":[", "{\"age\":1,\"name\":\"x\",\"tags\":[\"ab",
    "{\"age\":1,\"name\":\"x\",\"note\":\"", "{\"age\":1,\"name\":\"x\"}",
    "{\"age\":1,\"name\":\"x\"\n"};

TEST(GrammarMaskTest, SmallVocabMatchesBruteForce) {
  const Tokenizer* tok = test::SmallTokenizer();
  ASSERT_NE(tok, nullptr);
  auto vocab = VocabIndex::Build(*tok);
  EXPECT_EQ(vocab->vocab_size(), tok->vocab_size());
  const int32_t eos = tok->TokenId("<eos>");
  auto g = MustCompile(json::parse(kPersonSchema));
  for (const char* p : kPersonPrefixes) ExpectMaskMatchesBruteForce(g, *tok, vocab, p, eos);
  auto tools = CompileToolCalls(json::parse(R"([{"type":"function","function":{"name":"get_weather",
      "parameters":{"type":"object","properties":{"location":{"type":"string"}},
      "required":["location"]}}},{"type":"function","function":{"name":"get"}}])"),
                                std::nullopt, true);
  ASSERT_TRUE(tools.ok()) << tools.status().ToString();
  for (const char* p : {"", "<|tool_call>", "<|tool_call>call:get", "<|tool_call>call:get{",
                        "<|tool_call>call:get_weather{location:<|\"|>P<|",
                        "<|tool_call>call:get_weather{location:<|\"|>P<|\"|",
                        "<|tool_call>call:get{}<tool_call|>"}) {
    ExpectMaskMatchesBruteForce(*tools, *tok, vocab, p, eos);
  }
}

// Two stacks inside strings of different rooms (anyOf): plain tokens fit the larger room.
const char* kTwoStringsSchema = R"({"anyOf":[
    {"type":"object","properties":{"a":{"type":"string","maxLength":2}},"required":["a"]},
    {"type":"object","properties":{"a":{"type":"string","maxLength":5},"b":{"type":"integer"}},
     "required":["a","b"]}]})";

TEST(GrammarMaskTest, SeveralStacksInsideStrings) {
  const Tokenizer* tok = test::SmallTokenizer();
  ASSERT_NE(tok, nullptr);
  auto vocab = VocabIndex::Build(*tok);
  auto g = MustCompile(json::parse(kTwoStringsSchema));
  for (const char* p : {"{\"a\":\"", "{\"a\":\"x", "{\"a\":\"xy", "{\"a\":\"xyzw"}) {
    ExpectMaskMatchesBruteForce(g, *tok, vocab, p, tok->TokenId("<eos>"));
  }
}

TEST(GrammarMaskTest, EndIdsOnlyWhenComplete) {
  const Tokenizer* tok = test::SmallTokenizer();
  ASSERT_NE(tok, nullptr);
  auto vocab = VocabIndex::Build(*tok);
  const int32_t eos = tok->TokenId("<eos>"), turn = tok->TokenId("<|turn>");
  GrammarMatcher m(MustCompile(json::parse(R"({"type":"integer"})")), vocab, {eos});
  std::vector<uint8_t> mask(tok->vocab_size());
  m.FillMask(mask);
  EXPECT_EQ(mask[eos], 0);
  EXPECT_EQ(mask[turn], 0);  // other control tokens are never allowed
  EXPECT_FALSE(m.Accept(eos));
  ASSERT_TRUE(m.Accept(tok->TokenId("12")));
  m.FillMask(mask);
  EXPECT_EQ(mask[eos], 1);
  EXPECT_EQ(mask[tok->TokenId("1")], 1);
  EXPECT_TRUE(m.Accept(eos));
  EXPECT_FALSE(m.Accept(turn));
  GrammarMatcher o(MustCompile(json::parse(R"({"type":"object"})")), vocab, {eos});
  ASSERT_TRUE(o.Accept(tok->TokenId("{")));
  ASSERT_TRUE(o.Accept(tok->TokenId("}")));
  EXPECT_TRUE(o.IsTerminated());
  o.FillMask(mask);
  int allowed = 0;
  for (uint8_t a : mask) allowed += a;
  EXPECT_EQ(allowed, 1);
  EXPECT_EQ(mask[eos], 1);
}

TEST(GrammarMaskTest, Utf8SplitAcrossByteTokensAndEscapes) {
  const Tokenizer* tok = test::SmallTokenizer();
  ASSERT_NE(tok, nullptr);
  auto vocab = VocabIndex::Build(*tok);
  GrammarMatcher m(MustCompile(json::parse(R"({"type":"string","maxLength":3})")), vocab, {});
  ASSERT_TRUE(m.Accept(tok->TokenId("\"")));
  ASSERT_TRUE(m.Accept(0xC3));  // <0xC3>
  std::vector<uint8_t> mask(tok->vocab_size());
  m.FillMask(mask);
  for (int b = 0; b < 256; ++b) EXPECT_EQ(mask[b], b >= 0x80 && b <= 0xBF) << b;
  EXPECT_EQ(mask[tok->TokenId("\u00e9")], 0);
  ASSERT_TRUE(m.Accept(0xA9));
  ASSERT_TRUE(m.Accept(tok->TokenId("\\")));
  ASSERT_TRUE(m.Accept(tok->TokenId("u")));
  ASSERT_TRUE(m.Accept(tok->TokenId("00e9")));
  ASSERT_TRUE(m.Accept(tok->TokenId("\\n")));
  m.FillMask(mask);  // three code points: only the closing quote
  EXPECT_EQ(mask[tok->TokenId("\"")], 1);
  EXPECT_EQ(mask[tok->TokenId("a")], 0);
  EXPECT_TRUE(m.Accept(tok->TokenId("\"")));
  EXPECT_TRUE(m.IsComplete());
}

TEST(GrammarMaskTest, Gemma4VocabMatchesBruteForce) {
  G4_REQUIRE_NPM_TOKENIZER();
  const Tokenizer* tok = test::Gemma4Tokenizer();
  ASSERT_NE(tok, nullptr);
  const auto t0 = std::chrono::steady_clock::now();
  auto vocab = test::Gemma4Vocab();
  ASSERT_NE(vocab, nullptr);
  std::printf("VocabIndex::Build (first use): %.0f ms\n",
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                  .count());
  EXPECT_EQ(vocab->vocab_size(), gemma4::kVocabSize);
  auto g = MustCompile(json::parse(kPersonSchema));
  // Every id in one string state (the fast path), samples elsewhere (strides vary so that the
  // samples differ; the brute force is slow under sanitizers).
  int k = 0;
  for (const char* p : kPersonPrefixes) {
    const bool full = std::string(p) == "{\"age\":150,\"name\":\"ab";
    ExpectMaskMatchesBruteForce(g, *tok, vocab, p, gemma4::kEosId, full ? 1 : 7 + k++);
  }
  // Inside a string: text is allowed, control placeholders never.
  GrammarMatcher in_string(g, vocab, {gemma4::kEosId});
  ASSERT_TRUE(in_string.AcceptSymbols(test::Syms("{\"age\":1,\"name\":\"")));
  std::vector<uint8_t> mask(tok->vocab_size());
  in_string.FillMask(mask);
  EXPECT_EQ(mask[tok->TokenId("<table>")], 1);
  for (const char* never : {"<unused0>", "<unused99>", "<mask>", "[multimodal]", "<|turn>",
                            "<|\"|>", "<bos>", "<eos>"}) {
    ASSERT_GE(tok->TokenId(never), 0) << never;
    EXPECT_EQ(mask[tok->TokenId(never)], 0) << never;
  }
  auto two = MustCompile(json::parse(kTwoStringsSchema));
  ExpectMaskMatchesBruteForce(two, *tok, vocab, "{\"a\":\"xy", gemma4::kEosId, 3);
  auto tools = CompileToolCalls(json::parse(R"([{"type":"function","function":{"name":"get_weather",
      "parameters":{"type":"object","properties":{"location":{"type":"string"},
      "days":{"type":"integer"}},"required":["location"]}}}])"), std::nullopt, false);
  ASSERT_TRUE(tools.ok());
  ExpectMaskMatchesBruteForce(*tools, *tok, vocab, "<|tool_call>call:", gemma4::kEosId, 5);
  ExpectMaskMatchesBruteForce(*tools, *tok, vocab, "<|tool_call>call:get_weather{days:3,",
                              gemma4::kEosId, 4);
  ExpectMaskMatchesBruteForce(*tools, *tok, vocab,
                              "<|tool_call>call:get_weather{days:3,location:<|\"|>Pa",
                              gemma4::kEosId, 1);
}

}  // namespace
}  // namespace g4::grammar
