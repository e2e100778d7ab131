// Cached decoding is exactly as correct as the full forward: for prompt lengths around the
// window and several prefill chunk sizes, the cached logits equal the full forward's at every
// position within the golden tolerance, and every golden greedy continuation is reproduced.
#include <gtest/gtest.h>

#include <filesystem>

#include "common/golden_cases.h"
#include "common/greedy_check.h"
#include "common/protected_memory.h"
#include "common/temp_path.h"
#include "model/gemma4/model.h"
#include "model/registry.h"
#include "runtime/prefill.h"
#include "synthetic/gemma4.h"

namespace g4 {
namespace {

namespace fs = std::filesystem;
using testing::MaxDiff;

double MaxAbs(const std::vector<float>& x) {
  double m = 0;
  for (float v : x) m = std::max(m, std::fabs(static_cast<double>(v)));
  return m;
}

std::unique_ptr<Gemma4Model> SyntheticModel(const std::string& preset) {
  const fs::path dir = testing::ProcessTempPath("g4_decode_" + preset);
  if (!fs::exists(dir / "config.json")) {
    SyntheticOptions o;
    o.preset = preset;
    o.dtype = DType::kF32;
    o.seed = 11;
    if (!WriteSyntheticCheckpoint(o, dir.string()).ok()) return nullptr;
  }
  auto m = Gemma4Model::Load(dir.string());
  return m.ok() ? std::move(*m) : nullptr;
}

std::vector<int32_t> Prompt(int n, int vocab) {
  std::vector<int32_t> ids = {2};
  for (int i = 1; i < n; ++i) ids.push_back(static_cast<int32_t>((i * 7919 + 13) % vocab));
  return ids;
}


class CachedVsFullTest : public ::testing::TestWithParam<std::string> {};

// Prompt lengths W-1, W, W+1, 2W+3, 5W; chunk sizes 1 (step-by-step decode), 3, W, 64.
TEST_P(CachedVsFullTest, EveryPositionMatchesAtEveryChunkSize) {
  auto model = SyntheticModel(GetParam());
  ASSERT_NE(model, nullptr);
  const ModelConfig& c = model->config();
  const int W = c.sliding_window;
  Backend backend(BackendKind::kCpu, 0);
  for (int T : {W - 1, W, W + 1, 2 * W + 3, 5 * W}) {
    const std::vector<int32_t> ids = Prompt(T, c.vocab_size);
    auto full = model->Forward(backend, ids);
    ASSERT_TRUE(full.ok()) << full.status().ToString();
    const double tol = 1e-3 * MaxAbs(*full);
    for (int chunk : {1, 3, W, 64}) {
      auto cache = SequenceKvCache::Create(KvLayouts(c), 8 * W);
      ASSERT_TRUE(cache.ok());
      auto cached = Prefill(*model, backend, **cache, ids, chunk, /*all_logits=*/true);
      ASSERT_TRUE(cached.ok()) << cached.status().ToString();
      EXPECT_LE(MaxDiff(*cached, *full), tol) << "T=" << T << " chunk=" << chunk;
      EXPECT_EQ((*cache)->size(), T);
    }
  }
}

// A stored K/V dtype: every value attention reads is the stored, rounded one (a chunk's own
// entries too), whatever the chunk size. The chunk sizes' f32 differences in k and v (GEMM vs
// GEMV order) can flip a rounding, so they agree to `chunk_tol` * max|logit| rather than f32's
// 1e-3; the rounding itself moves the logits from the f32 full forward's by up to `full_tol`
// (printed). The cache tests check the stored values exactly (kv_cache_test.cc).
void ExpectStoredCacheChunkSizeIndependent(const std::string& preset, KvDtype kv,
                                           double chunk_tol, double full_tol) {
  auto model = SyntheticModel(preset);
  ASSERT_NE(model, nullptr);
  const ModelConfig& c = model->config();
  if (c.moe()) {
    // Routing is discontinuous: a rounding (or a chunk size's f32 rounding before it) that
    // moves a router score across another changes an expert. On this random network bf16
    // moved the logits by 0.73 max|logit| from the f32 full forward and by 0.25 between chunk
    // sizes 1 and 16 (T = 80), so neither bound is meaningful; the f32 cache is held to the
    // full forward above.
    GTEST_SKIP() << "MoE: a K/V rounding can change an expert choice";
  }
  for (const KvLayout& l : KvLayouts(c)) {
    if (!KvHeadFits(kv, l.head_dim)) {
      GTEST_SKIP() << KvDtypeName(kv) << " cannot store head_dim " << l.head_dim;
    }
  }
  const int W = c.sliding_window;
  Backend backend(BackendKind::kCpu, 0, MatVec::kExact, kv);
  for (int T : {W - 1, W + 1, 2 * W + 3, 5 * W}) {
    const std::vector<int32_t> ids = Prompt(T, c.vocab_size);
    auto full = model->Forward(backend, ids);
    ASSERT_TRUE(full.ok()) << full.status().ToString();
    const double scale = MaxAbs(*full);
    std::vector<float> first;
    for (int chunk : {1, 3, W, 64}) {
      auto cache = SequenceKvCache::Create(KvLayouts(c), 8 * W, HostMemory(), kv);
      ASSERT_TRUE(cache.ok());
      auto cached = Prefill(*model, backend, **cache, ids, chunk, /*all_logits=*/true);
      ASSERT_TRUE(cached.ok()) << cached.status().ToString();
      if (first.empty()) first = *cached;
      std::printf("%s KV %s T=%d chunk=%d: max |cached - full| / max|full| = %.2e, "
                  "|cached - chunk 1| %.2e\n",
                  KvDtypeName(kv), preset.c_str(), T, chunk, MaxDiff(*cached, *full) / scale,
                  MaxDiff(*cached, first) / scale);
      EXPECT_LE(MaxDiff(*cached, first), chunk_tol * scale) << "T=" << T << " chunk=" << chunk;
      EXPECT_LE(MaxDiff(*cached, *full), full_tol * scale) << "T=" << T << " chunk=" << chunk;
    }
  }
}

// bf16: chunk sizes agree to 5e-3 (measured: <= 2.1e-3, 31b-like at 5W); the rounding moves the
// logits from the full forward's by <= 1.8e-2 on these random networks, bounded at 5e-2.
TEST_P(CachedVsFullTest, Bf16CacheIsChunkSizeIndependent) {
  ExpectStoredCacheChunkSizeIndependent(GetParam(), KvDtype::kBF16, 5e-3, 5e-2);
}

// q8 (int8 blocks of 32; tiny's heads of 16 cannot be stored, so 31b-like only): a flipped
// rounding moves a value by a step (1/127 of its block's max, twice bf16's relative step), and
// which values flip depends on the build's f32 order: chunk sizes agree to <= 2.3e-3 in the
// Release build and <= 7.2e-3 in the ASan one (T = 80), bounded at 2e-2. The rounding moves the
// logits from the full forward's by <= 3.6e-2 (measured), bounded at 8e-2.
TEST_P(CachedVsFullTest, Q8CacheIsChunkSizeIndependent) {
  ExpectStoredCacheChunkSizeIndependent(GetParam(), KvDtype::kQ8, 2e-2, 8e-2);
}

INSTANTIATE_TEST_SUITE_P(Presets, CachedVsFullTest,
                         ::testing::Values("tiny", "31b-like", "26b-a4b-like"));

// Every golden case with a greedy entry: prefill in chunks of 5, then 16 single-token greedy
// steps through a cache storing `kv` reproduce meta.json's greedy ids exactly and
// greedy_logits.f32 within `tol_factor` times the case's fp32 tolerance.
void ExpectGoldenGreedy(KvDtype kv, double tol_factor) {
  const auto cases = testing::FindGoldenCases();
  if (cases.empty()) GTEST_SKIP() << "no golden cases found";
  Backend backend(BackendKind::kCpu, 0);
  for (const auto& gc : cases) {
    SCOPED_TRACE(gc.name);
    const auto meta = testing::ReadJson(gc.dir + "/meta.json");
    if (!meta.contains("greedy")) continue;
    // Routing is discontinuous: a bf16 rounding that moves a router score across another
    // changes an expert, and on these random networks that moves the logits by the difference
    // of two random experts (hf-26b-a4b-like: 7x the fp32 tolerance by step 2, then another
    // greedy id), so only the f32 cache is held to the MoE cases' continuations.
    if (kv == KvDtype::kBF16 && testing::IsMoeCase(meta)) continue;
    auto model = LoadCausalLM(gc.dir);
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    const double tol = meta["tolerance"]["fp32_engine"]["max_abs_diff"].get<double>();
    testing::ExpectCachedGreedyMatchesGolden(**model, backend, gc.dir, meta, tol_factor * tol,
                                             kv);
  }
}

TEST(GoldenGreedyTest, CachedGreedyContinuationsMatch) { ExpectGoldenGreedy(KvDtype::kF32, 1); }

// The golden cases through a bf16 cache: the greedy ids still match exactly, but the logits are
// NOT within the golden fp32 tolerance (rel 1e-3 of max|logit|): measured up to 38x it
// (tiny-window; tiny-bf16 37x, the others 10-12x), which is why --kv-dtype defaults to f32.
// Bounded here at 60x, so a bf16 path that drifts further still fails.
TEST(GoldenGreedyTest, Bf16CacheGreedyContinuationsMatch) {
  ExpectGoldenGreedy(KvDtype::kBF16, 60);
}

// No golden greedy test for q8: its rounding (3.6e-2 of max|logit| on 31b-like, above) flips a
// near-tie of these random networks (tiny-e2b-shape's greedy step 8). Its greedy continuations
// are held to transformers' on the real checkpoint (Gemma3RealTest.Q8KvCacheStaysCloseToF32).
// bf16 and q8 caches run on the cpu and ref backends only: the CUDA attention reads f32 K/V.
TEST(PrefillTest, Bf16AndQ8CachesOnTheCudaBackendAreRefused) {
  for (KvDtype kv : {KvDtype::kBF16, KvDtype::kQ8}) {
    const std::string name = KvDtypeName(kv);
    const auto cuda = Backend::Create(BackendKind::kCuda, 1, MatVec::kExact, kv);
    ASSERT_FALSE(cuda.ok());
    EXPECT_NE(cuda.status().message().find("--kv-dtype " + name), std::string::npos)
        << cuda.status().message();
    Backend cpu(BackendKind::kCpu, 1, MatVec::kExact, kv);
    EXPECT_TRUE(cpu.AttendsKvDtype(kv));
    EXPECT_NE(cpu.PolicyString().find(" kv=" + name), std::string::npos) << cpu.PolicyString();
  }
}

// A cache in another memory than the backend's would hand the ops pointers they cannot read
// (host pointers to a GPU kernel, device pointers to a CPU kernel): refused, naming both.
TEST(PrefillTest, CacheInAnotherMemoryThanTheBackendsIsRefused) {
  auto model = SyntheticModel("tiny");
  ASSERT_NE(model, nullptr);
  Backend backend(BackendKind::kCpu, 1);
  testing::ProtectedMemory device;
  auto cache = SequenceKvCache::Create(model->info().layers, 16, device);
  ASSERT_TRUE(cache.ok());
  auto r = Prefill(*model, backend, **cache, Prompt(3, 512));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("KV cache is in protected memory but the backend "
                                      "computes in host memory"),
            std::string::npos)
      << r.status().message();
  EXPECT_EQ((*cache)->size(), 0);
}

TEST(PrefillTest, PromptPastTheContextIsRefusedBeforeAnyWork) {
  auto model = SyntheticModel("tiny");
  ASSERT_NE(model, nullptr);
  Backend backend(BackendKind::kRef, 1);
  auto cache = SequenceKvCache::Create(model->info().layers, 16);
  ASSERT_TRUE(cache.ok());
  auto r = Prefill(*model, backend, **cache, Prompt(17, 512));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("does not fit the context of 16"), std::string::npos);
  EXPECT_EQ((*cache)->size(), 0);
}

}  // namespace
}  // namespace g4
