// Continuous batching at the model level: sequences stacked in one ForwardBatch (different
// lengths, positions, prefill chunks mixed with decode steps) get the same logits as each run
// alone — no sequence's output depends on its batch-mates. For every architecture: a tiny
// Gemma 4 and the Gemma 3 270M-like transformers fixture (both with a window of 8).
#include <gtest/gtest.h>

#include <filesystem>

#include "common/temp_path.h"
#include "model/registry.h"
#include "runtime/kv_cache/kv_cache.h"
#include "runtime/prefill.h"
#include "synthetic/gemma4.h"

namespace g4 {
namespace {

namespace fs = std::filesystem;

std::unique_ptr<CausalLM> LoadNamed(const std::string& name) {
  if (name == "gemma3" || name == "gemma4-moe") {  // MoE: its sequences choose other experts
    auto m = LoadCausalLM(std::string(G4_SOURCE_DIR) +
                          (name == "gemma3" ? "/tests/data/hf-gemma3/hf-gemma3-270m-like"
                                            : "/tests/data/hf/hf-26b-a4b-like"));
    return m.ok() ? std::move(*m) : nullptr;
  }
  const fs::path dir = testing::ProcessTempPath("g4_batch_tiny");
  if (!fs::exists(dir / "config.json")) {
    SyntheticOptions o;
    o.preset = "tiny";
    o.dtype = DType::kBF16;
    o.seed = 5;
    if (!WriteSyntheticCheckpoint(o, dir.string()).ok()) return nullptr;
  }
  auto m = LoadCausalLM(dir.string());
  return m.ok() ? std::move(*m) : nullptr;
}

std::vector<int32_t> Prompt(int n, int salt) {
  std::vector<int32_t> ids = {2};
  for (int i = 1; i < n; ++i) ids.push_back((i * 131 + salt * 17) % 512);
  return ids;
}

class ForwardBatchArchTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ForwardBatchArchTest, EachSequenceMatchesItsSoloRun) {
  auto model = LoadNamed(GetParam());
  ASSERT_NE(model, nullptr);
  Backend be(BackendKind::kCpu, 0);
  const std::vector<int> lengths = {5, 23, 9};  // window is 8: two of them wrap their rings

  // Solo: prefill each prompt, then decode 4 steps of fixed tokens; keep every logits row.
  std::vector<std::vector<std::vector<float>>> solo(lengths.size());
  for (size_t s = 0; s < lengths.size(); ++s) {
    auto cache = SequenceKvCache::Create(model->info().layers, 64);
    ASSERT_TRUE(cache.ok());
    auto l = Prefill(*model, be, **cache, Prompt(lengths[s], static_cast<int>(s)), 4);
    ASSERT_TRUE(l.ok());
    solo[s].push_back(*l);
    for (int k = 0; k < 4; ++k) {
      const int32_t tok[] = {static_cast<int32_t>(100 + 10 * s + k)};
      l = Prefill(*model, be, **cache, tok, 1);
      ASSERT_TRUE(l.ok());
      solo[s].push_back(*l);
    }
  }

  // Batched: sequence 0 prefills in one go while 1 prefills in chunks of 7 and 2 in one go;
  // then they decode together.
  std::vector<std::unique_ptr<SequenceKvCache>> caches;
  for (size_t s = 0; s < lengths.size(); ++s) caches.push_back(SequenceKvCache::Create(model->info().layers, 64).value());
  std::vector<std::vector<int32_t>> prompts;
  for (size_t s = 0; s < lengths.size(); ++s) prompts.push_back(Prompt(lengths[s], static_cast<int>(s)));
  std::vector<size_t> done(lengths.size(), 0);
  std::vector<std::vector<float>> last(lengths.size());
  while (done[0] < prompts[0].size() || done[1] < prompts[1].size() || done[2] < prompts[2].size()) {
    std::vector<CausalLM::BatchItem> items;
    std::vector<size_t> who;
    for (size_t s = 0; s < lengths.size(); ++s) {
      if (done[s] == prompts[s].size()) continue;
      const size_t n = std::min<size_t>(s == 1 ? 7 : 64, prompts[s].size() - done[s]);
      items.push_back({std::span<const int32_t>(prompts[s]).subspan(done[s], n),
                       static_cast<int32_t>(done[s]), caches[s].get(), true});
      who.push_back(s);
      done[s] += n;
    }
    auto out = model->ForwardBatch(be, items);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    for (size_t i = 0; i < who.size(); ++i) last[who[i]] = (*out)[i];
  }
  for (int k = -1; k < 4; ++k) {
    if (k >= 0) {
      std::vector<int32_t> toks(lengths.size());
      std::vector<CausalLM::BatchItem> items;
      for (size_t s = 0; s < lengths.size(); ++s) {
        toks[s] = static_cast<int32_t>(100 + 10 * s + k);
        items.push_back({std::span<const int32_t>(&toks[s], 1), caches[s]->size(), caches[s].get(), true});
      }
      auto out = model->ForwardBatch(be, items);
      ASSERT_TRUE(out.ok()) << out.status().ToString();
      for (size_t s = 0; s < lengths.size(); ++s) last[s] = (*out)[s];
    }
    for (size_t s = 0; s < lengths.size(); ++s) {
      const auto& want = solo[s][static_cast<size_t>(k + 1)];
      ASSERT_EQ(last[s].size(), want.size());
      double max_diff = 0, max_abs = 0;
      for (size_t i = 0; i < want.size(); ++i) {
        max_diff = std::max(max_diff, std::fabs(double(last[s][i]) - want[i]));
        max_abs = std::max(max_abs, std::fabs(double(want[i])));
      }
      EXPECT_LE(max_diff, 1e-4 * max_abs) << "sequence " << s << " step " << k;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Archs, ForwardBatchArchTest,
                         ::testing::Values("gemma4", "gemma3", "gemma4-moe"));

TEST(ForwardBatchTest, BatchWithoutCachesIsRefused) {
  auto model = LoadNamed("gemma4");
  ASSERT_NE(model, nullptr);
  Backend be(BackendKind::kRef, 1);
  const std::vector<int32_t> a = {2, 3}, b = {2, 4};
  std::vector<CausalLM::BatchItem> items = {{a, 0, nullptr, true}, {b, 0, nullptr, true}};
  EXPECT_FALSE(model->ForwardBatch(be, items).ok());
}

}  // namespace
}  // namespace g4
