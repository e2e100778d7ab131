// Sequence under a grammar: the mask is applied before sampling (whatever the logits favour,
// the answer follows the schema), end ids only once the value is whole, a trigger token starts
// a tool-call grammar, and a cut answer still finishes with "length". Gemma 4's real vocabulary.
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "runtime/grammar/grammar.h"
#include "runtime/sequence.h"
#include "tokenizer/gemma4_tokens.h"
#include "tokenizer/test_util.h"
#include "tokenizer/tokenizer.h"

namespace g4 {
namespace {

const Tokenizer* Gemma4() { return tokenizer_test::NpmGemma4Tokenizer(); }

std::shared_ptr<const grammar::VocabIndex> Index() {
  static const auto index = grammar::VocabIndex::Build(*Gemma4());
  return index;
}

struct Outcome {
  std::string text;
  std::string finish_reason;
  std::vector<int32_t> tokens;
};

// Runs a Sequence over random logits that favour `favoured` strongly (a model that would
// never write JSON on its own), decoding tokens with the tokenizer.
Outcome Drive(GenerationOptions o, uint64_t seed, int32_t favoured = -1) {
  const Tokenizer& tok = *Gemma4();
  auto decode = [&tok](int32_t id) {
    std::string s;
    (void)tok.AppendDecoded(id, DecodeOptions{true}, &s);
    return s;
  };
  Sequence seq({2, 105}, o, decode);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> noise(0.0f, 2.0f);
  std::vector<float> logits(static_cast<size_t>(tok.vocab_size()));
  for (int step = 0; step < o.max_tokens + 1 && !seq.finished(); ++step) {
    for (float& l : logits) l = noise(rng);
    if (favoured >= 0) logits[static_cast<size_t>(favoured)] = 50.0f;
    seq.Accept(logits);
  }
  return {seq.result().text, seq.result().finish_reason, seq.result().tokens};
}

GenerationOptions Options(const nlohmann::json& schema, int max_tokens) {
  GenerationOptions o;
  o.max_tokens = max_tokens;
  o.sampling.temperature = 1.0f;
  o.sampling.seed = 1;
  o.stop_ids = {gemma4::kEosId, gemma4::kTurnEndId};
  auto g = grammar::CompileJsonSchema(schema, "schema");
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  if (g.ok()) o.grammar.grammar = *g;
  o.grammar.vocab = Index();
  return o;
}

TEST(SequenceGrammarTest, TheMaskWinsOverTheLogits) {
  G4_REQUIRE_NPM_TOKENIZER();
  const nlohmann::json schema = {
      {"type", "object"},
      {"properties",
       {{"ok", {{"type", "boolean"}}}, {"n", {{"type", "integer"}, {"minimum", 1},
                                              {"maximum", 9}}}}},
      {"required", {"ok", "n"}},
      {"additionalProperties", false}};
  const int32_t hello = Gemma4()->Encode("hello")[0];
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    const Outcome out = Drive(Options(schema, 64), seed, hello);
    ASSERT_EQ(out.finish_reason, "stop") << out.text;
    const nlohmann::json j = nlohmann::json::parse(out.text, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << out.text;
    EXPECT_TRUE(j["ok"].is_boolean()) << out.text;
    ASSERT_TRUE(j["n"].is_number_integer()) << out.text;
    EXPECT_GE(j["n"].get<int>(), 1);
    EXPECT_LE(j["n"].get<int>(), 9);
    EXPECT_EQ(j.size(), 2u) << out.text;
  }
}

TEST(SequenceGrammarTest, ACutAnswerFinishesWithLength) {
  G4_REQUIRE_NPM_TOKENIZER();
  const nlohmann::json schema = {{"type", "array"}, {"items", {{"type", "string"}}},
                                 {"minItems", 50}};
  const Outcome out = Drive(Options(schema, 4), 3);
  EXPECT_EQ(out.finish_reason, "length");
  EXPECT_EQ(out.tokens.size(), 4u);
  EXPECT_EQ(out.text.front(), '[');
}

TEST(SequenceGrammarTest, WithoutEndIdsACompleteValueStops) {
  G4_REQUIRE_NPM_TOKENIZER();
  GenerationOptions o = Options({{"const", "yes"}}, 32);
  o.ignore_eos = true;  // no end id to offer: the sequence ends when the grammar does
  const Outcome out = Drive(o, 4);
  EXPECT_EQ(out.text, "\"yes\"");
  EXPECT_EQ(out.finish_reason, "stop");
}

TEST(SequenceGrammarTest, ATriggerTokenStartsTheToolGrammar) {
  G4_REQUIRE_NPM_TOKENIZER();
  const nlohmann::json tools = nlohmann::json::parse(R"([{"type":"function","function":{
      "name":"add","parameters":{"type":"object","properties":{"a":{"type":"integer"},
      "b":{"type":"integer"}},"required":["a","b"]}}}])");
  auto g = grammar::CompileToolCalls(tools, std::nullopt, /*parallel=*/false);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  GenerationOptions o;
  o.max_tokens = 60;
  o.sampling.temperature = 1.0f;
  o.sampling.seed = 5;
  o.stop_ids = {gemma4::kEosId, gemma4::kTurnEndId, gemma4::kToolResponseStartId};
  o.grammar.grammar = *g;
  o.grammar.vocab = Index();
  const int32_t call = Gemma4()->TokenId(gemma4::kToolCallStart);
  ASSERT_GE(call, 0);
  o.grammar.trigger_token = call;
  // Free text until the model opens a call (favoured here), then the call is held to "add".
  const Outcome out = Drive(o, 6, call);
  ASSERT_EQ(out.finish_reason, "stop") << out.text;
  ASSERT_EQ(out.text.rfind("<|tool_call>call:add{", 0), 0u) << out.text;
  EXPECT_NE(out.text.find("<tool_call|>"), std::string::npos) << out.text;

  // Never opened: nothing is constrained (a favoured plain word is simply sampled).
  o.max_tokens = 3;
  const int32_t hello = Gemma4()->Encode("hello")[0];
  const Outcome free = Drive(o, 7, hello);
  EXPECT_EQ(free.tokens, (std::vector<int32_t>{hello, hello, hello}));
}

}  // namespace
}  // namespace g4
