// The Attention cases (attention_test.h) on the CPU kernels, every Highway target this machine
// runs, pools of 1 and 3 threads; decode and prefill over long caches at Gemma 4's head sizes,
// and the CPU tolerance catching an error just above it.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "core/dtype.h"
#include "gtest/gtest.h"
#include "kernels/attention_test.h"
#include "kernels/cpu/kernels.h"
#include "kernels/ref/kernels.h"
#include "kernels/test_util.h"

namespace g4 {
namespace testing {

INSTANTIATE_TEST_SUITE_P(Cpu, AttentionTest, ::testing::ValuesIn(CpuOpBackends()),
                         OpBackendName);

}  // namespace testing

namespace {

using testing::AttentionShape;
using testing::Layout;

constexpr double kTol = testing::kAttentionCpuTol;

double RunAndCompare(ThreadPool& pool, Layout layout, const AttentionShape& s, bool misalign,
                     uint32_t seed, float perturb = 0.0f, KvDtype dtype = KvDtype::kF32,
                     bool paged = false) {
  return testing::RunAndCompare(cpu::Attention, pool, layout, s, misalign, seed, perturb, dtype,
                                paged);
}

// Decode against a long cache at Gemma 4 head sizes: many keys per softmax, K/V stored in each
// cache dtype. The threads split the slots from the first visible one to the last: a few filled
// slots at the front of a ring (the rest empty), a filled array with an empty tail (the window
// leaves only its middle), visible keys scattered at random, none at all; a filled array read
// through a block table.
TEST(AttentionLong, DecodeOverLongCache) {
  ThreadPool pool(2);
  for (int64_t D : {256, 512}) {
    for (int32_t window : {0, 512}) {
      for (KvDtype dtype : {KvDtype::kF32, KvDtype::kBF16, KvDtype::kQ8}) {
        const AttentionShape s{1, 1500, 8, 1, D, window, 1.0f / std::sqrt(static_cast<float>(D))};
        SCOPED_TRACE("D=" + std::to_string(D) + " window=" + std::to_string(window) +
                     " kv=" + KvDtypeName(dtype));
        EXPECT_LE(RunAndCompare(pool, Layout::kRing, s, true, 7, 0.0f, dtype), kTol);
        EXPECT_LE(RunAndCompare(pool, Layout::kPrefill, s, false, 8, 0.0f, dtype), kTol);
        EXPECT_LE(RunAndCompare(pool, Layout::kRandom, s, false, 11, 0.0f, dtype), kTol);
        EXPECT_LE(RunAndCompare(pool, Layout::kAllEmpty, s, false, 12, 0.0f, dtype), kTol);
        EXPECT_LE(RunAndCompare(pool, Layout::kPrefill, s, true, 13, 0.0f, dtype, true), kTol);
      }
    }
  }
}

// Prefill chunks against a long cache at Gemma 4 head sizes: token tiles over many key blocks,
// the running max growing from block to block; a filled array read through a block table.
TEST(AttentionLong, PrefillOverLongCache) {
  ThreadPool pool(2);
  for (int64_t D : {256, 512}) {
    for (int32_t window : {0, 512}) {
      for (KvDtype dtype : {KvDtype::kF32, KvDtype::kBF16, KvDtype::kQ8}) {
        const AttentionShape s{37, 1500, 8, 1, D, window, 1.0f / std::sqrt(static_cast<float>(D))};
        SCOPED_TRACE("D=" + std::to_string(D) + " window=" + std::to_string(window) +
                     " kv=" + KvDtypeName(dtype));
        EXPECT_LE(RunAndCompare(pool, Layout::kPrefill, s, true, 9, 0.0f, dtype), kTol);
        EXPECT_LE(RunAndCompare(pool, Layout::kRing, s, false, 10, 0.0f, dtype), kTol);
        EXPECT_LE(RunAndCompare(pool, Layout::kPrefill, s, false, 14, 0.0f, dtype, true), kTol);
      }
    }
  }
}

TEST(AttentionComparator, CatchesSmallErrors) {
  ThreadPool pool(1);
  const AttentionShape s{3, 20, 4, 2, 33, 0, 0.2f};
  EXPECT_LE(RunAndCompare(pool, Layout::kPrefill, s, false, 3), kTol / 4);
  EXPECT_GT(RunAndCompare(pool, Layout::kPrefill, s, false, 3, 3 * kTol), kTol);
}

}  // namespace
}  // namespace g4
