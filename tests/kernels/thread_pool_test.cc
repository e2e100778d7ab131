// g4::ThreadPool::ParallelFor, as the CPU kernels use it: every index in [0, n) is handed to
// exactly one call, chunks are contiguous and non-empty, there are no more chunks than threads,
// and the pool survives many back-to-back loops; ParallelForClaimed's pieces likewise. (A chunk
// is at least `grain` long: there are at most floor(n / grain) of them.)

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/thread_pool.h"
#include "gtest/gtest.h"

namespace g4 {
namespace {

// Runs ParallelFor (claimed: ParallelForClaimed) over every n and grain below and checks that
// each index is handed to exactly one call, in contiguous non-empty chunks of at least `grain`
// (when split), no more of them than pieces_per_thread * threads and n / grain.
void CheckCover(bool claimed, int64_t pieces_per_thread) {
  for (int threads : {1, 2, 3, 7}) {
    ThreadPool pool(threads);
    for (int64_t n : {0, 1, 2, 3, 5, 64, 1001}) {
      for (int64_t grain : {1, 4, 100, 5000}) {
        SCOPED_TRACE("claimed=" + std::to_string(claimed) + " threads=" +
                     std::to_string(threads) + " n=" + std::to_string(n) +
                     " grain=" + std::to_string(grain));
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        std::mutex mu;
        std::vector<std::pair<int64_t, int64_t>> chunks;
        const auto fn = [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
          std::lock_guard<std::mutex> lock(mu);
          chunks.emplace_back(begin, end);
        };
        if (claimed) {
          pool.ParallelForClaimed(n, grain, fn);
        } else {
          pool.ParallelFor(n, grain, fn);
        }
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << i;
        if (n == 0) {
          EXPECT_TRUE(chunks.empty());
          continue;
        }
        const int64_t most = std::min<int64_t>(pieces_per_thread * threads, n / grain);
        EXPECT_LE(static_cast<int64_t>(chunks.size()), std::max<int64_t>(1, most));
        std::sort(chunks.begin(), chunks.end());
        EXPECT_EQ(chunks.front().first, 0);
        EXPECT_EQ(chunks.back().second, n);
        for (size_t c = 0; c < chunks.size(); ++c) {
          EXPECT_LT(chunks[c].first, chunks[c].second);
          if (chunks.size() > 1) {
            EXPECT_GE(chunks[c].second - chunks[c].first, grain);
          }
          if (c > 0) {
            EXPECT_EQ(chunks[c - 1].second, chunks[c].first);
          }
        }
      }
    }
  }
}

TEST(ThreadPoolTest, ParallelForCoversEveryIndexExactlyOnce) { CheckCover(false, 1); }

TEST(ThreadPoolTest, ParallelForClaimedCoversEveryIndexExactlyOnce) {
  CheckCover(true, ThreadPool::kPiecesPerThread);
}

// A thread that is held up takes fewer pieces: the others claim the rest instead of waiting.
TEST(ThreadPoolTest, ParallelForClaimedGivesTheRestToTheThreadsThatAreFree) {
  ThreadPool pool(2);
  std::mutex mu;
  std::vector<std::thread::id> owners;
  std::atomic<bool> first{true};
  pool.ParallelForClaimed(8, 1, [&](int64_t begin, int64_t end) {
    // The first piece claimed sleeps long enough for the other thread to claim all the rest.
    if (first.exchange(false)) std::this_thread::sleep_for(std::chrono::milliseconds(300));
    std::lock_guard<std::mutex> lock(mu);
    for (int64_t i = begin; i < end; ++i) owners.push_back(std::this_thread::get_id());
  });
  ASSERT_EQ(owners.size(), 8u);
  // 7 pieces by one thread, 1 by the sleeper.
  std::sort(owners.begin(), owners.end());
  const auto most = std::max(std::count(owners.begin(), owners.end(), owners.front()),
                             std::count(owners.begin(), owners.end(), owners.back()));
  EXPECT_EQ(most, 7);
}

// Static and claimed loops alternating back to back: a worker that wakes late for a claimed
// loop must claim nothing of the next one.
TEST(ThreadPoolTest, StaticAndClaimedLoopsBackToBack) {
  ThreadPool pool(3);
  std::atomic<int64_t> sum{0};
  int64_t expect = 0;
  for (int rep = 0; rep < 2000; ++rep) {
    const auto add = [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) sum.fetch_add(i);
    };
    const bool claimed = rep % 3 != 0;
    const int64_t n = claimed ? 10 + rep % 7 : 10;
    expect += n * (n - 1) / 2;
    if (claimed) {
      pool.ParallelForClaimed(n, 1, add);
    } else {
      pool.ParallelFor(n, 1, add);
    }
  }
  EXPECT_EQ(sum.load(), expect);
}

TEST(ThreadPoolTest, ManyBackToBackLoops) {
  ThreadPool pool(3);
  std::atomic<int64_t> sum{0};
  for (int rep = 0; rep < 2000; ++rep) {
    pool.ParallelFor(10, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) sum.fetch_add(i);
    });
  }
  EXPECT_EQ(sum.load(), 2000 * 45);
}

}  // namespace
}  // namespace g4
