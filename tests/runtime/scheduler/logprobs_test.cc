// The engine's logprobs are the log-softmax of the model's logits: each generated token's
// logprob and its top-k alternatives equal log_softmax of the full forward's logits at that
// position, computed here in double precision, and the alternatives are the k best, best first.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>

#include "common/temp_path.h"
#include "model/registry.h"
#include "runtime/scheduler/engine.h"
#include "synthetic/gemma4.h"

namespace g4 {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// Cached decode and the full forward agree in f32 to ~1e-6 of the logits, far inside this.
constexpr double kTol = 1e-4;

std::unique_ptr<CausalLM> TinyF32Model() {
  const fs::path dir = testing::ProcessTempPath("g4_logprobs_tiny");
  SyntheticOptions o;
  o.preset = "tiny";
  o.dtype = DType::kF32;
  o.seed = 5;
  if (!WriteSyntheticCheckpoint(o, dir.string()).ok()) return nullptr;
  auto m = LoadCausalLM(dir.string());
  return m.ok() ? std::move(*m) : nullptr;
}

// log_softmax of one row, in double.
std::vector<double> LogSoftmax(std::span<const float> row) {
  const double max = *std::max_element(row.begin(), row.end());
  double sum = 0;
  for (float x : row) sum += std::exp(x - max);
  const double log_z = max + std::log(sum);
  std::vector<double> out(row.size());
  for (size_t i = 0; i < row.size(); ++i) out[i] = row[i] - log_z;
  return out;
}

struct LogprobRun {
  std::vector<int32_t> prompt;
  std::vector<TokenLogprob> logprobs;  // one per generated token
  std::vector<int32_t> tokens;
};

LogprobRun Generate(const CausalLM& model, bool greedy, int top_k) {
  LogprobRun run;
  run.prompt = {2, 17, 301, 44, 9, 260, 77};
  EngineRequest req;
  req.prompt = run.prompt;
  req.options.max_tokens = 8;
  req.options.ignore_eos = true;
  req.options.sampling.greedy = greedy;
  req.options.sampling.temperature = 1.0f;
  req.options.sampling.seed = 31;
  req.top_logprobs = top_k;
  Backend backend(BackendKind::kCpu, 0);
  EngineOptions eo;
  eo.max_batch = 1;
  eo.ctx_size = 64;
  Engine engine(model, backend, nullptr, eo);
  engine.Start();
  auto h = engine.Submit(req);
  EXPECT_TRUE(h.ok()) << h.status().ToString();
  if (!h.ok()) return run;
  RequestEvent ev;
  while ((*h)->Next(&ev, 30s)) {
    if (ev.kind == RequestEvent::Kind::kFinished) {
      run.tokens = ev.result.tokens;
      break;
    }
    if (ev.token >= 0) run.logprobs.push_back(ev.logprob);
  }
  engine.Shutdown(1s);
  return run;
}

// Checks every generated token's logprobs against the full forward over prompt + tokens.
void ExpectLogSoftmax(const CausalLM& model, const LogprobRun& run, int top_k) {
  ASSERT_EQ(run.logprobs.size(), run.tokens.size());
  ASSERT_FALSE(run.tokens.empty());
  std::vector<int32_t> seq = run.prompt;
  seq.insert(seq.end(), run.tokens.begin(), run.tokens.end());
  Backend backend(BackendKind::kCpu, 0);
  auto logits = model.Forward(backend, seq);
  ASSERT_TRUE(logits.ok()) << logits.status().ToString();
  const size_t vocab = static_cast<size_t>(model.info().vocab_size);
  double best_logprob = -INFINITY;  // the normaliser matters: no position is near-certain
  for (size_t i = 0; i < run.tokens.size(); ++i) {
    // The logits that chose token i are those of the position before it.
    const size_t pos = run.prompt.size() - 1 + i;
    const std::vector<double> ref =
        LogSoftmax(std::span<const float>(*logits).subspan(pos * vocab, vocab));
    const TokenLogprob& lp = run.logprobs[i];
    best_logprob = std::max(best_logprob, *std::max_element(ref.begin(), ref.end()));
    EXPECT_EQ(lp.token, run.tokens[i]);
    EXPECT_NEAR(lp.logprob, ref[static_cast<size_t>(run.tokens[i])], kTol) << "token " << i;
    // The k best of the reference, best first (ties are improbable in random f32 logits).
    std::vector<int32_t> order(vocab);
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + top_k, order.end(),
                      [&](int32_t a, int32_t b) { return ref[a] > ref[b]; });
    ASSERT_EQ(lp.top.size(), static_cast<size_t>(top_k)) << "token " << i;
    for (int j = 0; j < top_k; ++j) {
      EXPECT_EQ(lp.top[j].first, order[j]) << "token " << i << " rank " << j;
      EXPECT_NEAR(lp.top[j].second, ref[static_cast<size_t>(lp.top[j].first)], kTol)
          << "token " << i << " rank " << j;
      if (j > 0) {
        EXPECT_GE(lp.top[j - 1].second, lp.top[j].second);
      }
    }
  }
  EXPECT_LT(best_logprob, -0.1) << "logits too peaked to tell log_softmax from x - max";
}

TEST(EngineLogprobsTest, GreedyLogprobsAreLogSoftmaxOfTheLogits) {
  auto model = TinyF32Model();
  ASSERT_NE(model, nullptr);
  const LogprobRun run = Generate(*model, /*greedy=*/true, /*top_k=*/5);
  ExpectLogSoftmax(*model, run, 5);
  // Greedy picks the best token, so its logprob is the first alternative's.
  for (const TokenLogprob& lp : run.logprobs) {
    ASSERT_FALSE(lp.top.empty());
    EXPECT_EQ(lp.top[0].first, lp.token);
    EXPECT_EQ(lp.top[0].second, lp.logprob);
  }
}

// Sampled tokens are not always the best, which checks the chosen logprob apart from top[0].
TEST(EngineLogprobsTest, SampledLogprobsAreLogSoftmaxOfTheLogits) {
  auto model = TinyF32Model();
  ASSERT_NE(model, nullptr);
  const LogprobRun run = Generate(*model, /*greedy=*/false, /*top_k=*/20);
  ExpectLogSoftmax(*model, run, 20);
}

}  // namespace
}  // namespace g4
