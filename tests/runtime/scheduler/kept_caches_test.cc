// KeptCaches: a branch pins the kept cache it shares whole blocks with, so that those blocks are
// counted once; a pinned cache is not evicted, taken over or superseded; a cache a plan takes
// over is claimed (no other plan uses it); kept caches that share blocks count them once.
#include "runtime/scheduler/kept_caches.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <numeric>

#include "common/temp_path.h"
#include "model/registry.h"
#include "runtime/kv_cache/kv_fill.h"
#include "synthetic/gemma4.h"

namespace g4 {
namespace {

namespace fs = std::filesystem;

class KeptCachesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const fs::path dir = testing::ProcessTempPath("g4_kept_caches_tiny");
    if (!fs::exists(dir / "config.json")) {
      SyntheticOptions o;
      o.preset = "tiny";  // sliding window 8: the rings have wrapped at any prefix used here
      ASSERT_TRUE(WriteSyntheticCheckpoint(o, dir.string()).ok());
    }
    auto m = LoadCausalLM(dir.string());
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    model_ = std::move(*m);
  }

  // A kept cache of the tokens 0, 1, ..., n - 1, with a snapshot at `snapshot_at` (0: none).
  KeptCache Kept(int32_t n, int32_t snapshot_at = 0) {
    auto c = SequenceKvCache::Create(model_->info().layers, 1024);
    EXPECT_TRUE(c.ok());
    KeptCache k;
    k.cache = std::move(*c);
    if (snapshot_at > 0) {
      EXPECT_TRUE(FillKvCache(model_->info(), backend_, *k.cache, snapshot_at).ok());
      auto snap = k.cache->Snapshot();
      EXPECT_TRUE(snap.ok());
      k.snapshot = std::move(*snap);
    }
    EXPECT_TRUE(FillKvCache(model_->info(), backend_, *k.cache, n).ok());
    k.ids.resize(static_cast<size_t>(n));
    std::iota(k.ids.begin(), k.ids.end(), 0);
    return k;
  }

  // The tokens 0 .. n - 1, then `tail`.
  static std::vector<int32_t> Prompt(int32_t n, std::vector<int32_t> tail) {
    std::vector<int32_t> p(static_cast<size_t>(n));
    std::iota(p.begin(), p.end(), 0);
    p.insert(p.end(), tail.begin(), tail.end());
    return p;
  }

  std::unique_ptr<CausalLM> model_;
  Backend backend_{BackendKind::kCpu, 1};
};

TEST_F(KeptCachesTest, BranchesPinTheKeptCacheAndLeaveOutItsWholeBlocks) {
  KeptCaches kept;
  kept.Keep(Kept(600, 520));
  const size_t bytes = kept.bytes();
  ASSERT_GT(bytes, 0u);
  // Two prompts leaving it at 520 (its snapshot): branches sharing blocks 0 and 1 whole (the
  // block holding 512-519 they copy when they write 520).
  const ResumePlan a = kept.Plan(Prompt(520, {900})), b = kept.Plan(Prompt(520, {901}));
  for (const ResumePlan& p : {a, b}) {
    EXPECT_NE(p.kept, 0u);
    EXPECT_EQ(p.len, 520);
    EXPECT_FALSE(p.take_over);
    EXPECT_EQ(p.shared_bytes, 2 * 256 * SequenceKvCache::Create(model_->info().layers, 1)
                                             .value()
                                             ->bytes_per_token());
  }
  kept.EvictTo(0);  // pinned by both plans: it stays
  EXPECT_EQ(kept.size(), 1);
  Resumed ra = kept.Take(a);
  ASSERT_NE(ra.cache, nullptr);
  EXPECT_EQ(ra.cached, 520);
  EXPECT_EQ(ra.cache->size(), 520);
  EXPECT_EQ(ra.pinned, a.kept);
  EXPECT_EQ(ra.shared_bytes, a.shared_bytes);
  kept.Release(b);
  kept.EvictTo(0);  // still pinned by the running branch
  EXPECT_EQ(kept.size(), 1);
  EXPECT_EQ(kept.bytes(), bytes);
  kept.Unpin(ra.pinned);
  kept.EvictTo(0);
  EXPECT_EQ(kept.size(), 0);
  EXPECT_EQ(kept.bytes(), 0u);
}

TEST_F(KeptCachesTest, ATakeOverIsClaimedAndAPinnedCacheIsCopiedInstead) {
  KeptCaches kept;
  kept.Keep(Kept(300));
  // The prompt goes on from all of it: taken over, and no other plan may use it meanwhile.
  const ResumePlan over = kept.Plan(Prompt(300, {7, 8}));
  EXPECT_TRUE(over.take_over);
  EXPECT_EQ(over.len, 300);
  EXPECT_EQ(over.shared_bytes, 0u);
  EXPECT_EQ(kept.Plan(Prompt(300, {9})).kept, 0u);
  kept.Release(over);

  // Pinned by a branch (its snapshot at 256), the same prompt gets a copy of all 300 positions
  // and the kept cache stays; a cache that holds all of it does not supersede it while pinned.
  kept.Clear();
  kept.Keep(Kept(300, 256));
  const ResumePlan branch = kept.Plan(Prompt(256, {5}));
  ASSERT_EQ(branch.len, 256);
  EXPECT_FALSE(branch.take_over);
  const ResumePlan copy = kept.Plan(Prompt(300, {7, 8}));
  EXPECT_FALSE(copy.take_over);
  EXPECT_EQ(copy.len, 300);
  EXPECT_EQ(copy.shared_bytes, branch.shared_bytes);  // one whole block either way
  Resumed rb = kept.Take(branch), rc = kept.Take(copy);
  ASSERT_NE(rb.cache, nullptr);
  ASSERT_NE(rc.cache, nullptr);
  EXPECT_EQ(rc.cache->size(), 300);
  EXPECT_EQ(kept.size(), 1);
  kept.Keep(Kept(310));  // holds all of the pinned one
  EXPECT_EQ(kept.size(), 2);
  kept.Unpin(rb.pinned);
  kept.Unpin(rc.pinned);
  kept.Keep(Kept(320));  // now it goes, and so does the unpinned 310
  EXPECT_EQ(kept.size(), 1);
}

TEST_F(KeptCachesTest, KeptCachesCountTheBlocksTheyShareOnce) {
  KeptCaches kept;
  kept.Keep(Kept(600, 520));
  const size_t alone = kept.bytes();
  const ResumePlan plan = kept.Plan(Prompt(520, {900}));
  Resumed branch = kept.Take(plan);
  ASSERT_NE(branch.cache, nullptr);
  ASSERT_GT(plan.shared_bytes, 0u);
  // The branch runs on to 560 (a copy of the block holding 512-519 first) and is kept too.
  ASSERT_TRUE(FillKvCache(model_->info(), backend_, *branch.cache, 560).ok());
  kept.Unpin(branch.pinned);
  KeptCache b;
  b.cache = std::move(branch.cache);
  b.ids = Prompt(520, std::vector<int32_t>(40, 900));
  const size_t b_alone = b.cache->allocated_bytes();
  kept.Keep(std::move(b));
  EXPECT_EQ(kept.size(), 2);
  EXPECT_EQ(kept.bytes(), alone + b_alone - plan.shared_bytes);
  // The older one goes first, and what it shared stays counted with the branch.
  kept.EvictTo(kept.bytes() - 1);
  EXPECT_EQ(kept.size(), 1);
  EXPECT_EQ(kept.bytes(), b_alone);
}

}  // namespace
}  // namespace g4
