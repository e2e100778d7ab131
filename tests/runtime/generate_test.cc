// Generate end to end on golden checkpoints: greedy with --ignore-eos reproduces every stored
// continuation; stop ids, max tokens, cancellation and the degeneracy stop behave as documented.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/golden_cases.h"
#include "model/registry.h"
#include "runtime/generator.h"

namespace g4 {
namespace {

const testing::GoldenCase* FindCase(const std::vector<testing::GoldenCase>& cases,
                                    const std::string& name) {
  for (const auto& c : cases) if (c.name == name) return &c;
  return nullptr;
}

GenerationOptions Greedy(int max_tokens) {
  GenerationOptions o;
  o.max_tokens = max_tokens;
  o.sampling.greedy = true;
  return o;
}

TEST(GenerateTest, GreedyReproducesEveryGoldenContinuation) {
  const auto cases = testing::FindGoldenCases();
  if (cases.empty()) GTEST_SKIP() << "no golden cases found";
  Backend backend(BackendKind::kCpu, 0);
  for (const auto& gc : cases) {
    SCOPED_TRACE(gc.name);
    const auto meta = testing::ReadJson(gc.dir + "/meta.json");
    if (!meta.contains("greedy")) continue;
    auto model = LoadCausalLM(gc.dir);
    ASSERT_TRUE(model.ok());
    GenerationOptions o = Greedy(16);
    o.stop_ids = {1, 106, 50};
    o.ignore_eos = true;  // the goldens apply no stop tokens
    o.prefill_chunk = 7;
    auto r = Generate(**model, backend, testing::ReadIds(gc.dir + "/input_ids.json"), o);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    std::vector<int32_t> expected;
    for (const auto& id : meta["greedy"]["ids"]) expected.push_back(id.get<int32_t>());
    EXPECT_EQ(r->tokens, expected);
    EXPECT_EQ(r->finish_reason, "length");
    EXPECT_EQ(r->stats.decode_steps, 15);  // no forward pass after the last token
  }
}

class GenerateOnTinyBf16 : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto cases = testing::FindGoldenCases();
    const auto* gc = FindCase(cases, "golden/tiny-bf16");
    if (!gc) GTEST_SKIP() << "golden/tiny-bf16 not found";
    auto m = LoadCausalLM(gc->dir);
    ASSERT_TRUE(m.ok());
    model_ = std::move(*m);
    prompt_ = testing::ReadIds(gc->dir + "/input_ids.json");
    // Its greedy continuation: 141, 183, 124, 467, 496, 460, 254, 254, 460, 254, ...
  }
  std::unique_ptr<CausalLM> model_;
  std::vector<int32_t> prompt_;
  Backend backend_{BackendKind::kCpu, 0};
};

TEST_F(GenerateOnTinyBf16, StopIdEndsGenerationAndIsNotReturned) {
  GenerationOptions o = Greedy(16);
  o.stop_ids = {467};
  auto r = Generate(*model_, backend_, prompt_, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->tokens, (std::vector<int32_t>{141, 183, 124}));
  EXPECT_EQ(r->finish_reason, "stop");
}

TEST_F(GenerateOnTinyBf16, CancelFromTheCallback) {
  GenerationCallbacks cb;
  int seen = 0;
  cb.on_token = [&](int32_t, std::string_view) { return ++seen < 2; };
  auto r = Generate(*model_, backend_, prompt_, Greedy(16), cb);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->tokens.size(), 2u);
  EXPECT_EQ(r->finish_reason, "cancelled");
}

TEST_F(GenerateOnTinyBf16, DegeneracyVerdictAndOptionalStop) {
  GenerationOptions o = Greedy(16);
  o.degeneracy.max_token_run = 2;  // trips on "254, 254" at generated index 6
  auto r = Generate(*model_, backend_, prompt_, o);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->degeneracy.degenerate);
  EXPECT_EQ(r->degeneracy.start, 6);
  EXPECT_EQ(r->tokens.size(), 16u);  // reported, not stopped
  o.stop_on_degenerate = true;
  r = Generate(*model_, backend_, prompt_, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->finish_reason, "degenerate");
  EXPECT_EQ(r->tokens.size(), 8u);
}

TEST_F(GenerateOnTinyBf16, SeededSamplingIsReproducible) {
  GenerationOptions o;
  o.max_tokens = 12;
  o.sampling.temperature = 1.0f;
  o.sampling.seed = 1234;
  auto a = Generate(*model_, backend_, prompt_, o);
  auto b = Generate(*model_, backend_, prompt_, o);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->tokens, b->tokens);
}

TEST_F(GenerateOnTinyBf16, PromptPastTheContextIsAnErrorBeforeAnyWork) {
  GenerationOptions o = Greedy(4);
  o.max_context = 10;
  auto r = Generate(*model_, backend_, prompt_, o);  // 20 prompt tokens
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), ::testing::HasSubstr("longer than the context of 10"));
}

// A chat's next turn in the cache of its last one: the turn's prompt is the last prompt, the
// answer tokens that were run, and new ids; continuing the cache answers what a fresh prefill of
// the whole prompt answers, and only the new part is prefilled.
TEST_F(GenerateOnTinyBf16, GenerateInCacheContinuesWhereTheCacheEnds) {
  auto cache = SequenceKvCache::Create(model_->info().layers, 128);
  ASSERT_TRUE(cache.ok());
  auto first = GenerateInCache(*model_, backend_, **cache, prompt_, Greedy(5));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->tokens, (std::vector<int32_t>{141, 183, 124, 467, 496}));
  // The last sampled token was never run: the cache holds the prompt and 4 answer tokens.
  ASSERT_EQ((*cache)->size(), static_cast<int32_t>(prompt_.size()) + 4);
  std::vector<int32_t> next = prompt_;
  next.insert(next.end(), first->tokens.begin(), first->tokens.end());
  next.insert(next.end(), {5, 9, 11});
  std::vector<int32_t> progress;
  GenerationCallbacks cb;
  cb.on_prefill_progress = [&](int64_t done, int64_t total) {
    progress.push_back(static_cast<int32_t>(done));
    EXPECT_EQ(total, 4);
  };
  auto continued = GenerateInCache(*model_, backend_, **cache, next, Greedy(8), cb);
  ASSERT_TRUE(continued.ok()) << continued.status().ToString();
  EXPECT_EQ(continued->stats.prompt_tokens, static_cast<int64_t>(next.size()));
  EXPECT_EQ(continued->stats.cached_tokens, static_cast<int64_t>(prompt_.size()) + 4);
  EXPECT_EQ(progress, (std::vector<int32_t>{4}));  // the new part only: 496, 5, 9, 11
  auto fresh = Generate(*model_, backend_, next, Greedy(8));
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ(continued->tokens, fresh->tokens);
  // A prompt that does not extend the cache is refused.
  auto same = GenerateInCache(*model_, backend_, **cache, prompt_, Greedy(2));
  ASSERT_FALSE(same.ok());
  EXPECT_THAT(same.status().message(), ::testing::HasSubstr("must extend it"));
}

}  // namespace
}  // namespace g4
