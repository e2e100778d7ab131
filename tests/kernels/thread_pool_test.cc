// g4::ThreadPool::ParallelFor, as the CPU kernels use it: every index in [0, n) is handed to
// exactly one call, chunks are contiguous and non-empty, there are no more chunks than threads,
// and the pool survives many back-to-back loops. (Chunk length vs `grain` is not checked: the
// kernels use grain only as a "not worth a thread" threshold, and the current split, n items in
// min(threads, ceil(n / grain)) equal parts, can make parts shorter than grain, e.g. n=5, grain=4.)

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/thread_pool.h"
#include "gtest/gtest.h"

namespace g4 {
namespace {

TEST(ThreadPoolTest, ParallelForCoversEveryIndexExactlyOnce) {
  for (int threads : {1, 2, 3, 7}) {
    ThreadPool pool(threads);
    for (int64_t n : {0, 1, 2, 3, 5, 64, 1001}) {
      for (int64_t grain : {1, 4, 100, 5000}) {
        SCOPED_TRACE("threads=" + std::to_string(threads) + " n=" + std::to_string(n) +
                     " grain=" + std::to_string(grain));
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        std::mutex mu;
        std::vector<std::pair<int64_t, int64_t>> chunks;
        pool.ParallelFor(n, grain, [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
          std::lock_guard<std::mutex> lock(mu);
          chunks.emplace_back(begin, end);
        });
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << i;
        if (n == 0) {
          EXPECT_TRUE(chunks.empty());
          continue;
        }
        EXPECT_LE(static_cast<int>(chunks.size()), threads);
        // A range no longer than grain is never split.
        if (n <= grain) {
          EXPECT_EQ(chunks.size(), 1u);
        }
        std::sort(chunks.begin(), chunks.end());
        EXPECT_EQ(chunks.front().first, 0);
        EXPECT_EQ(chunks.back().second, n);
        for (size_t c = 0; c < chunks.size(); ++c) {
          EXPECT_LT(chunks[c].first, chunks[c].second);
          if (c > 0) {
            EXPECT_EQ(chunks[c - 1].second, chunks[c].first);
          }
        }
      }
    }
  }
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
