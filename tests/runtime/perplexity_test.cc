// Perplexity (llama-perplexity's protocol) against the same sum written out from the full
// forward's logits: chunks as fresh sequences with BOS first, the second half scored, the tail
// dropped; any forward batch size gives the same value.
#include "runtime/perplexity.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "common/temp_path.h"
#include "model/registry.h"
#include "synthetic/gemma4.h"

namespace g4 {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::unique_ptr<CausalLM> Tiny() {
  const fs::path dir = testing::ProcessTempPath("g4_ppl_tiny");
  if (!fs::exists(dir / "config.json")) {
    SyntheticOptions o;
    o.preset = "tiny";
    o.seed = 9;
    if (!WriteSyntheticCheckpoint(o, dir.string()).ok()) return nullptr;
  }
  auto m = LoadCausalLM(dir.string());
  return m.ok() ? std::move(*m) : nullptr;
}

TEST(PerplexityTest, MatchesTheProtocolWrittenOut) {
  auto model = Tiny();
  ASSERT_NE(model, nullptr);
  Backend be(BackendKind::kCpu, 1);
  const int64_t V = model->info().vocab_size;
  std::vector<int32_t> tokens = {2};
  for (int i = 1; i < 45; ++i) tokens.push_back((i * 37 + 11) % 500 + 5);
  const int ctx = 20;  // 2 chunks of 20; 5 tokens of tail dropped; 9 scored per chunk
  double nll = 0;
  int64_t count = 0;
  for (int c = 0; c < 2; ++c) {
    std::vector<int32_t> chunk(tokens.begin() + c * ctx, tokens.begin() + (c + 1) * ctx);
    chunk[0] = 2;
    auto logits = model->Forward(be, chunk);
    ASSERT_TRUE(logits.ok());
    for (int j = ctx / 2; j < ctx - 1; ++j) {
      const float* row = logits->data() + j * V;
      double max = row[0], z = 0;
      for (int64_t i = 0; i < V; ++i) max = std::max<double>(max, row[i]);
      for (int64_t i = 0; i < V; ++i) z += std::exp(row[i] - max);
      nll += std::log(z) + max - row[chunk[j + 1]];
      ++count;
    }
  }
  for (int batch : {1, 7, 128}) {
    PerplexityOptions o;
    o.ctx = ctx;
    o.bos = 2;
    o.batch = batch;
    auto r = Perplexity(*model, be, tokens, o);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->chunks, 2);
    EXPECT_EQ(r->scored, count);
    // The chunked forward and the full one agree to float rounding (1e-6 of the logits here, a
    // little more at -O1 under ASan); a scoring mistake moves the sum by whole tokens' NLLs.
    EXPECT_NEAR(r->nll_sum, nll, 1e-5 * nll) << "batch " << batch;
    EXPECT_NEAR(std::log(r->ppl()), nll / count, 1e-5) << "batch " << batch;
    ASSERT_EQ(r->running_ppl.size(), 2u);
    EXPECT_DOUBLE_EQ(r->running_ppl.back(), r->ppl());
  }
  PerplexityOptions one;
  one.ctx = ctx;
  one.max_chunks = 1;
  auto r = Perplexity(*model, be, tokens, one);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->chunks, 1);
}

// A baseline backend: the same arithmetic gives KL 0 and every top token equal; the ref
// backend (f64 sums) differs by rounding only; the tiny bf16 model has no block weights, so
// MatVec::kQ8 is the exact path here and its KL is ~0 too (the real checkpoint's test measures
// int8 activations).
TEST(PerplexityTest, BaselineBackendIsComparedPositionByPosition) {
  auto model = Tiny();
  ASSERT_NE(model, nullptr);
  Backend be(BackendKind::kCpu, 1), same(BackendKind::kCpu, 1), ref(BackendKind::kRef, 1);
  std::vector<int32_t> tokens = {2};
  for (int i = 1; i < 40; ++i) tokens.push_back((i * 53 + 7) % 500 + 5);
  for (Backend* base : {&same, &ref}) {
    PerplexityOptions o;
    o.ctx = 20;
    o.bos = 2;
    o.batch = 1;
    o.baseline = base;
    auto r = Perplexity(*model, be, tokens, o);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->scored, 18);
    EXPECT_NEAR(r->baseline_ppl(), r->ppl(), 1e-4 * r->ppl());
    EXPECT_LT(r->kl_sum, 1e-6);
    EXPECT_LE(r->kl_max, r->kl_sum + 1e-15);
    EXPECT_EQ(r->top1_same, 18);
    if (base == &same) {
      EXPECT_DOUBLE_EQ(r->baseline_nll_sum, r->nll_sum);
    }
  }
}

TEST(PerplexityTest, TooShortATextOrTooLongAContextIsRefused) {
  auto model = Tiny();
  ASSERT_NE(model, nullptr);
  Backend be(BackendKind::kCpu, 1);
  const std::vector<int32_t> tokens(10, 7);
  PerplexityOptions o;
  o.ctx = 16;
  auto r = Perplexity(*model, be, tokens, o);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("fewer than one chunk of 16"));
  o.ctx = model->info().max_context + 1;
  r = Perplexity(*model, be, tokens, o);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("perplexity context"));
}

}  // namespace
}  // namespace g4
