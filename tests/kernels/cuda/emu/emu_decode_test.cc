// Cached decoding on the CUDA backend, for the emulation (run_backend.sh; tests/runtime's decode
// tests run on the CPU backend only): every golden case prefilled through the KV cache in chunks
// of 5 and then decoded token by token reproduces meta.json's greedy ids and greedy_logits.f32
// within the golden tolerance, and chunked prefill (chunks of 3) gives the full forward's logits
// at every position. Skips without a device, like the other GPU tests. A case costs about a
// minute under emulation (decode launches many key-split attention blocks), so run_backend.sh
// runs three by default: tiny-bf16 (bf16 weights: f16 on a T4), tiny-window (the sliding
// window) and tiny-e2b-donors (head dims 32/64, so attention on the device; KV-sharing layers).
// DecodeGraphsReplayWhatOpByOpComputes: decode steps recorded as CUDA graphs and replayed
// (model/step_graphs.h) give exactly the op-by-op logits, across full-layer growth and a new
// sequence at the same batch size (each recorded anew at once, not run op by op); where an op
// runs on the host (attention at head dim 16) recording is refused and the steps still match.
// BatchedStepsAreEachSequenceAlone: a decode batch (and a prefill chunk with it) gives each
// sequence's own logits.
// EngineServesEveryBatchSizeFromGraphs: the engine's warm-up records a step at every batch size
// up to max_batch, so serving runs no decode step op by op, and its greedy outputs are golden.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <span>
#include <vector>

#include "common/golden_cases.h"
#include "common/greedy_check.h"
#include "kernels/cuda/kernels.h"
#include "model/registry.h"
#include "runtime/prefill.h"
#include "runtime/scheduler/engine.h"

namespace g4 {
namespace {

using testing::MaxDiff;

class EmuDecodeTest : public ::testing::TestWithParam<testing::GoldenCase> {};

// Whether every layer's attention runs on the device (else a step cannot be recorded).
bool AttentionAllOnDevice(const ModelInfo& c) {
  for (const KvLayout& l : c.layers) {
    if (!cuda::AttentionOnDevice(l.head_dim)) return false;
  }
  return true;
}

// Positions a test's caches hold: the prompt and what the tests decode after it.
int Ctx(const std::vector<int32_t>& prompt) {
  return std::max(256, static_cast<int>(prompt.size()) + 64);
}

std::string CaseName(const ::testing::TestParamInfo<testing::GoldenCase>& info) {
  std::string s = info.param.name;
  for (char& ch : s) if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

TEST_P(EmuDecodeTest, CachedGreedyMatchesGoldenAndChunksMatchFullForward) {
  const testing::GoldenCase& gc = GetParam();
  const auto meta = testing::ReadJson(gc.dir + "/meta.json");
  if (testing::HasRouterTies(meta)) GTEST_SKIP() << "router ties: torch.topk's CPU order";
  auto model = LoadCausalLM(gc.dir);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  Backend backend(BackendKind::kCuda, 1);
  if (!backend.status().ok()) GTEST_SKIP() << backend.status().message();
  const ModelInfo& c = (*model)->info();
  const double tol = meta["tolerance"]["fp32_engine"]["max_abs_diff"].get<double>();
  const std::vector<int32_t> prompt = testing::ReadIds(gc.dir + "/input_ids.json");

  auto full = (*model)->Forward(backend, prompt);
  ASSERT_TRUE(full.ok()) << full.status().ToString();
  {
    auto cache = SequenceKvCache::Create(c.layers, Ctx(prompt), backend.memory());
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
  auto model = LoadCausalLM(gc.dir);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  Backend backend(BackendKind::kCuda, 1);
  if (!backend.status().ok()) GTEST_SKIP() << backend.status().message();
  ASSERT_TRUE(backend.can_capture());
  const ModelInfo& c = (*model)->info();
  const std::vector<int32_t> prompt = testing::ReadIds(gc.dir + "/input_ids.json");
  StepGraphs graphs;
  // Prefills twin caches with `p` (blocks of `block` positions), then decodes `steps` greedy
  // tokens on both: op by op on one, through `graphs` on the other; the logits must be equal.
  auto decode = [&](std::span<const int32_t> p, int64_t block, int steps) {
    auto op_cache = SequenceKvCache::Create(c.layers, Ctx(prompt), backend.memory(),
                                            KvDtype::kF32, block);
    auto graph_cache = SequenceKvCache::Create(c.layers, Ctx(prompt), backend.memory(),
                                               KvDtype::kF32, block);
    ASSERT_TRUE(op_cache.ok() && graph_cache.ok());
    auto want = Prefill(**model, backend, **op_cache, p, 5);
    auto got = Prefill(**model, backend, **graph_cache, p, 5);
    ASSERT_TRUE(want.ok() && got.ok());
    for (int k = 0; k < steps; ++k) {
      SCOPED_TRACE("step " + std::to_string(k));
      const int32_t next[] = {static_cast<int32_t>(
          std::max_element(want->begin(), want->end()) - want->begin())};
      CausalLM::ForwardOptions o;
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
  };
  // Blocks of 4 positions: the full layers grow (and move) during these steps.
  const int steps = 10;
  decode(prompt, 4, steps);
  const StepGraphs::Stats first = graphs.stats();
  EXPECT_EQ(first.recorded + first.replayed + first.op_by_op, steps);
  // Another sequence at the same batch size (the first one's caches die): its first step is
  // recorded at once on the size's buffers, the next replayed.
  const std::span<const int32_t> shorter(prompt.data(), prompt.size() - 2);
  decode(shorter, 64, 3);
  const StepGraphs::Stats& st = graphs.stats();
  EXPECT_EQ(st.recorded + st.replayed + st.op_by_op, steps + 3);
  if (AttentionAllOnDevice(c)) {
    EXPECT_TRUE(graphs.refused().empty()) << graphs.refused();
    EXPECT_EQ(first.op_by_op, 1);  // the first step of the size only
    EXPECT_GE(first.recorded, 2);  // the full layers grew at least once after the first recording
    EXPECT_GE(first.replayed, steps / 2);
    EXPECT_EQ(st.op_by_op, 1);
    EXPECT_GE(st.recorded, first.recorded + 1);
    EXPECT_GE(st.replayed, first.replayed + 1);
    EXPECT_GT(st.ops_per_step, static_cast<int64_t>(c.layers.size()) * 6);
    std::printf("emu: %s: %lld graph nodes per decode step, %d layers\n", gc.name.c_str(),
                static_cast<long long>(st.ops_per_step), static_cast<int>(c.layers.size()));
  } else {
    EXPECT_NE(graphs.refused().find("host"), std::string::npos) << graphs.refused();
    EXPECT_EQ(st.recorded + st.replayed, 0);
  }
  EXPECT_TRUE(cuda::LastError().ok()) << cuda::LastError().ToString();
}

// A decode batch on the CUDA backend: three sequences (prompt prefixes of unequal length, so
// unequal key counts) stepped together, with a prefill chunk of a fourth in the second step,
// give each sequence's logits as stepping it alone does (one attention launch and the norm
// launch's KV writes serve the batch: ops/attention.h, ops/norm_rope.h), within 1e-4 of the
// largest |logit| (key splits differ with the batch); and the batched steps replayed from
// graphs give the op-by-op batch's logits exactly.
TEST_P(EmuDecodeTest, BatchedStepsAreEachSequenceAlone) {
  const testing::GoldenCase& gc = GetParam();
  auto model = LoadCausalLM(gc.dir);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  Backend backend(BackendKind::kCuda, 1);
  if (!backend.status().ok()) GTEST_SKIP() << backend.status().message();
  const ModelInfo& c = (*model)->info();
  const std::vector<int32_t> prompt = testing::ReadIds(gc.dir + "/input_ids.json");
  // Three prefixes down to 6 tokens shorter, and a 4-token chunk.
  if (prompt.size() < 8) GTEST_SKIP() << gc.name << ": a prompt of " << prompt.size() << " ids";
  constexpr int kSeqs = 3;
  const size_t lens[kSeqs] = {prompt.size(), prompt.size() - 3, prompt.size() - 6};
  std::vector<std::unique_ptr<SequenceKvCache>> alone, batched, graphed;
  std::vector<int32_t> next(kSeqs);
  for (int i = 0; i < kSeqs; ++i) {
    const std::span<const int32_t> p(prompt.data(), lens[i]);
    for (auto* caches : {&alone, &batched, &graphed}) {
      auto cache = SequenceKvCache::Create(c.layers, Ctx(prompt), backend.memory());
      ASSERT_TRUE(cache.ok());
      auto logits = Prefill(**model, backend, **cache, p, 5);
      ASSERT_TRUE(logits.ok()) << logits.status().ToString();
      next[i] = static_cast<int32_t>(std::max_element(logits->begin(), logits->end()) -
                                     logits->begin());
      caches->push_back(std::move(*cache));
    }
  }
  // The prefill chunk's caches (one per batch copy).
  auto extra = SequenceKvCache::Create(c.layers, Ctx(prompt), backend.memory());
  auto graph_extra = SequenceKvCache::Create(c.layers, Ctx(prompt), backend.memory());
  ASSERT_TRUE(extra.ok() && graph_extra.ok());
  StepGraphs graphs;
  for (int step = 0; step < 5; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    std::vector<CausalLM::BatchItem> items(kSeqs), graph_items(kSeqs);
    for (int i = 0; i < kSeqs; ++i) {
      items[i].ids = std::span<const int32_t>(&next[i], 1);
      items[i].start_pos = static_cast<int32_t>(batched[i]->size());
      items[i].cache = batched[i].get();
      graph_items[i] = items[i];
      graph_items[i].cache = graphed[i].get();
    }
    if (step == 1) {  // a sequence's first chunk joins the step (T = 4 rows)
      CausalLM::BatchItem chunk;
      chunk.ids = std::span<const int32_t>(prompt.data(), 4);
      chunk.cache = extra->get();
      items.push_back(chunk);
      chunk.cache = graph_extra->get();
      graph_items.push_back(chunk);
    }
    auto got = (*model)->ForwardBatch(backend, items);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    auto replayed = (*model)->ForwardBatch(backend, graph_items, nullptr, &graphs);
    ASSERT_TRUE(replayed.ok()) << replayed.status().ToString();
    for (int i = 0; i < kSeqs; ++i) EXPECT_EQ(MaxDiff((*replayed)[i], (*got)[i]), 0.0) << i;
    for (int i = 0; i < kSeqs; ++i) {
      CausalLM::ForwardOptions o;
      o.start_pos = static_cast<int32_t>(alone[i]->size());
      o.cache = alone[i].get();
      o.last_logits_only = true;
      auto want = (*model)->Forward(backend, std::span<const int32_t>(&next[i], 1), o);
      ASSERT_TRUE(want.ok()) << want.status().ToString();
      const double max_abs = MaxDiff(*want, std::vector<float>(want->size(), 0.0f));
      EXPECT_LE(MaxDiff((*got)[i], *want), 1e-4 * max_abs) << "sequence " << i;
      next[i] = static_cast<int32_t>(std::max_element(want->begin(), want->end()) -
                                     want->begin());
    }
  }
  if (AttentionAllOnDevice(c)) EXPECT_GE(graphs.stats().replayed, 1);
  EXPECT_TRUE(cuda::LastError().ok()) << cuda::LastError().ToString();
}

TEST_P(EmuDecodeTest, EngineServesEveryBatchSizeFromGraphs) {
  const testing::GoldenCase& gc = GetParam();
  const auto meta = testing::ReadJson(gc.dir + "/meta.json");
  if (!meta.contains("greedy")) GTEST_SKIP() << "no greedy ids in " << gc.name;
  if (testing::HasRouterTies(meta)) GTEST_SKIP() << "router ties: torch.topk's CPU order";
  auto model = LoadCausalLM(gc.dir);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  Backend backend(BackendKind::kCuda, 1);
  if (!backend.status().ok()) GTEST_SKIP() << backend.status().message();
  if (!AttentionAllOnDevice((*model)->info())) GTEST_SKIP() << "attention on the host";
  const std::vector<int32_t> prompt = testing::ReadIds(gc.dir + "/input_ids.json");
  const std::vector<int32_t> golden = meta["greedy"]["ids"].get<std::vector<int32_t>>();
  EngineOptions eo;
  eo.max_batch = 3;
  eo.ctx_size = 64;
  Engine engine(**model, backend, nullptr, eo);
  ASSERT_TRUE(engine.Warmup().ok());
  const StepGraphs::Stats warm = engine.Stats().decode_steps;
  EXPECT_EQ(warm.op_by_op, 3);  // each size's first step
  EXPECT_EQ(warm.recorded, 3);  // and its second
  // Three requests admitted together, ending after unequal counts: steps of 3, 2 and 1.
  const int lengths[] = {static_cast<int>(golden.size()), 9, 5};
  std::vector<std::shared_ptr<RequestHandle>> handles;
  for (int n : lengths) {
    EngineRequest req;
    req.prompt = prompt;
    req.options.max_tokens = n;
    req.options.sampling.greedy = true;
    req.options.ignore_eos = true;  // the golden ids ignore stop ids
    auto h = engine.Submit(req);
    ASSERT_TRUE(h.ok()) << h.status().ToString();
    handles.push_back(*h);
  }
  engine.Start();
  for (size_t i = 0; i < handles.size(); ++i) {
    RequestEvent ev;
    while (handles[i]->Next(&ev, std::chrono::seconds(600)) &&
           ev.kind != RequestEvent::Kind::kFinished) {
    }
    ASSERT_EQ(ev.kind, RequestEvent::Kind::kFinished) << "request " << i;
    const std::vector<int32_t> want(golden.begin(), golden.begin() + lengths[i]);
    EXPECT_EQ(ev.result.tokens, want) << "request " << i;
  }
  engine.Shutdown(std::chrono::milliseconds(0));
  const StepGraphs::Stats served = engine.Stats().decode_steps;
  EXPECT_EQ(served.op_by_op, warm.op_by_op);  // no serving step ran op by op
  EXPECT_GE(served.recorded, warm.recorded + 3);  // new caches at each size: recorded at once
  EXPECT_GE(served.replayed, static_cast<int64_t>(golden.size()) - 3 - 3);
  std::printf("emu: %s: engine decode steps: warm-up %lld op by op, %lld recorded; served "
              "%lld recorded, %lld replayed\n",
              gc.name.c_str(), static_cast<long long>(warm.op_by_op),
              static_cast<long long>(warm.recorded),
              static_cast<long long>(served.recorded - warm.recorded),
              static_cast<long long>(served.replayed - warm.replayed));
  EXPECT_TRUE(cuda::LastError().ok()) << cuda::LastError().ToString();
}

INSTANTIATE_TEST_SUITE_P(Golden, EmuDecodeTest, ::testing::ValuesIn(testing::FindGoldenCases()),
                         CaseName);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(EmuDecodeTest);

}  // namespace
}  // namespace g4
