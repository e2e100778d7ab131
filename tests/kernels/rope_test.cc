// cpu::Rope against ref::Rope: both Gemma 4 RoPEs (the default one, and the proportional one
// whose inv_freq has zeros for the unrotated pairs), odd T and H, head dims 2 to 512, positions
// up to 131071, pools of 1 and 3 threads. The CPU kernel does the ref's f64 arithmetic, so the
// results are equal bit for bit. Its table of cos / sin is kept between calls: a call with new
// positions or frequencies in the same buffers must not reuse it.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "kernels/cpu/kernels.h"
#include "kernels/ref/kernels.h"
#include "kernels/test_util.h"

namespace g4 {
namespace {

using testing::InvFreq;
using testing::RandomFloats;

TEST(CpuRopeTest, EqualsRefForDefaultAndProportionalRope) {
  std::mt19937 rng(7);
  uint32_t seed = 10;
  for (int threads : {1, 3}) {
    ThreadPool pool(threads);
    for (int64_t T : {1, 5, 37}) {
      for (int64_t H : {1, 3, 8}) {
        for (int64_t D : {2, 10, 256, 512}) {
          for (bool proportional : {false, true}) {
            SCOPED_TRACE(::testing::Message() << "threads=" << threads << " T=" << T << " H="
                                              << H << " D=" << D << " prop=" << proportional);
            const std::vector<float> inv =
                proportional ? InvFreq(D, 1e6, D / 8) : InvFreq(D, 1e4, D / 2);
            std::vector<int32_t> pos(static_cast<size_t>(T));
            std::uniform_int_distribution<int32_t> pd(0, 131071);
            for (auto& p : pos) p = pd(rng);
            const std::vector<float> x0 = RandomFloats(T * H * D, ++seed, -2.0f, 2.0f);
            std::vector<float> ref = x0, x = x0, again = x0;
            ref::Rope(pool, ref.data(), pos.data(), T, H, D, inv.data());
            cpu::Rope(pool, x.data(), pos.data(), T, H, D, inv.data());
            EXPECT_EQ(x, ref);
            cpu::Rope(pool, again.data(), pos.data(), T, H, D, inv.data());  // the kept table
            EXPECT_EQ(again, ref);
          }
        }
      }
    }
  }
}

// The same position and frequency buffers with new contents, as a forward pass reuses them.
TEST(CpuRopeTest, NewPositionsOrFrequenciesInTheSameBuffersAreNotServedFromTheTable) {
  ThreadPool pool(2);
  const int64_t T = 7, H = 2, D = 16;
  std::vector<int32_t> pos = {0, 1, 2, 3, 4, 5, 6};
  std::vector<float> inv = InvFreq(D, 1e4, D / 2);
  const std::vector<float> x0 = RandomFloats(T * H * D, 3, -1.0f, 1.0f);
  auto check = [&](const char* what) {
    SCOPED_TRACE(what);
    std::vector<float> ref = x0, x = x0;
    ref::Rope(pool, ref.data(), pos.data(), T, H, D, inv.data());
    cpu::Rope(pool, x.data(), pos.data(), T, H, D, inv.data());
    EXPECT_EQ(x, ref);
  };
  check("first");
  pos[3] = 1000;
  check("one position changed");
  inv[2] *= 0.5f;
  check("one frequency changed");
  for (int32_t& p : pos) p += 7;
  check("the next chunk");
  std::vector<int32_t> shorter(pos.begin(), pos.begin() + 3);
  std::vector<float> ref = x0, x = x0;
  ref::Rope(pool, ref.data(), shorter.data(), 3, H, D, inv.data());
  cpu::Rope(pool, x.data(), shorter.data(), 3, H, D, inv.data());
  EXPECT_EQ(x, ref);  // fewer tokens: the first 3 rows
}

}  // namespace
}  // namespace g4
