// Cached decoding on the CUDA backend, for the emulation (run_backend.sh; tests/runtime's decode
// tests run on the CPU backend only): every golden case prefilled through the KV cache in chunks
// of 5 and then decoded token by token reproduces meta.json's greedy ids and greedy_logits.f32
// within the golden tolerance, and chunked prefill (chunks of 3) gives the full forward's logits
// at every position. Skips without a device, like the other GPU tests. A case costs about a
// minute under emulation (decode launches many key-split attention blocks), so run_backend.sh
// runs three by default: tiny-bf16 (bf16 weights: f16 on a T4), tiny-window (the sliding
// window) and tiny-e2b-donors (head dims 32/64, so attention on the device; KV-sharing layers).
// DecodeGraphsReplayWhatOpByOpComputes: decode steps recorded as CUDA graphs and replayed
// (model/step_graphs.h) give exactly the op-by-op logits, across full-layer growth (a new
// recording); where an op runs on the host (attention at head dim 16) recording is refused and
// the steps still match.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/golden_cases.h"
#include "common/greedy_check.h"
#include "kernels/cuda/kernels.h"
#include "model/gemma4.h"
#include "runtime/prefill.h"

namespace g4 {
namespace {

using testing::MaxDiff;

class EmuDecodeTest : public ::testing::TestWithParam<testing::GoldenCase> {};

std::string CaseName(const ::testing::TestParamInfo<testing::GoldenCase>& info) {
  std::string s = info.param.name;
  for (char& ch : s) if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

TEST_P(EmuDecodeTest, CachedGreedyMatchesGoldenAndChunksMatchFullForward) {
  const testing::GoldenCase& gc = GetParam();
  const auto meta = testing::ReadJson(gc.dir + "/meta.json");
  auto model = Gemma4Model::Load(gc.dir);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  Backend backend(BackendKind::kCuda, 1);
  if (!backend.status().ok()) GTEST_SKIP() << backend.status().message();
  const ModelConfig& c = (*model)->config();
  const double tol = meta["tolerance"]["fp32_engine"]["max_abs_diff"].get<double>();
  const std::vector<int32_t> prompt = testing::ReadIds(gc.dir + "/input_ids.json");

  auto full = (*model)->Forward(backend, prompt);
  ASSERT_TRUE(full.ok()) << full.status().ToString();
  {
    auto cache = SequenceKvCache::Create(c, 256, backend.memory());
    ASSERT_TRUE(cache.ok());
    auto cached = Prefill(**model, backend, **cache, prompt, 3, /*all_logits=*/true);
    ASSERT_TRUE(cached.ok()) << cached.status().ToString();
    EXPECT_LE(MaxDiff(*cached, *full), tol) << "chunks of 3";
  }

  if (meta.contains("greedy")) {
    testing::ExpectCachedGreedyMatchesGolden(**model, backend, gc.dir, meta, tol);
  }
  EXPECT_TRUE(cuda::LastError().ok()) << cuda::LastError().ToString();
}

TEST_P(EmuDecodeTest, DecodeGraphsReplayWhatOpByOpComputes) {
  const testing::GoldenCase& gc = GetParam();
  auto model = Gemma4Model::Load(gc.dir);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  Backend backend(BackendKind::kCuda, 1);
  if (!backend.status().ok()) GTEST_SKIP() << backend.status().message();
  ASSERT_TRUE(backend.can_capture());
  const ModelConfig& c = (*model)->config();
  const std::vector<int32_t> prompt = testing::ReadIds(gc.dir + "/input_ids.json");
  // Blocks of 4 positions: the full layers grow (and move) during the decode below.
  auto op_cache = SequenceKvCache::Create(c, 256, backend.memory(), 4);
  auto graph_cache = SequenceKvCache::Create(c, 256, backend.memory(), 4);
  ASSERT_TRUE(op_cache.ok() && graph_cache.ok());
  auto want = Prefill(**model, backend, **op_cache, prompt, 5);
  auto got = Prefill(**model, backend, **graph_cache, prompt, 5);
  ASSERT_TRUE(want.ok() && got.ok());
  StepGraphs graphs;
  const int steps = 10;
  for (int k = 0; k < steps; ++k) {
    SCOPED_TRACE("step " + std::to_string(k));
    const int32_t next[] = {static_cast<int32_t>(
        std::max_element(want->begin(), want->end()) - want->begin())};
    Gemma4Model::ForwardOptions o;
    o.start_pos = (*op_cache)->size();
    o.cache = op_cache->get();
    o.last_logits_only = true;
    want = (*model)->Forward(backend, next, o);
    o.cache = graph_cache->get();
    o.graphs = &graphs;
    got = (*model)->Forward(backend, next, o);
    ASSERT_TRUE(want.ok() && got.ok()) << got.status().ToString();
    ASSERT_EQ(MaxDiff(*got, *want), 0.0);  // the same kernels with the same arguments
  }
  const StepGraphs::Stats& st = graphs.stats();
  EXPECT_EQ(st.recorded + st.replayed + st.op_by_op, steps);
  bool on_device = true;
  for (const LayerConfig& l : c.layers) on_device = on_device && cuda::AttentionOnDevice(l.head_dim);
  if (on_device) {
    EXPECT_TRUE(graphs.refused().empty()) << graphs.refused();
    EXPECT_GE(st.recorded, 2);  // the full layers grew at least once after the first recording
    EXPECT_GE(st.replayed, steps / 2);
    EXPECT_GT(st.ops_per_step, c.num_layers * 6);
    std::printf("emu: %s: %lld graph nodes per decode step, %d layers\n", gc.name.c_str(),
                static_cast<long long>(st.ops_per_step), static_cast<int>(c.num_layers));
  } else {
    EXPECT_NE(graphs.refused().find("host"), std::string::npos) << graphs.refused();
    EXPECT_EQ(st.recorded + st.replayed, 0);
  }
  EXPECT_TRUE(cuda::LastError().ok()) << cuda::LastError().ToString();
}

INSTANTIATE_TEST_SUITE_P(Golden, EmuDecodeTest, ::testing::ValuesIn(testing::FindGoldenCases()),
                         CaseName);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(EmuDecodeTest);

}  // namespace
}  // namespace g4
