// g4::cpu::Add and g4::cpu::Scale against their g4::ref twins: one f32 add or multiply per
// element in both, so the comparison is exact. Odd lengths (SIMD tails), aliasing (out = a,
// out = b), misaligned buffers, pools of 1 and 3 threads.

#include <cstdint>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/kernels.h"
#include "kernels/ref/kernels.h"
#include "kernels/test_util.h"

namespace g4 {
namespace {

using testing::FloatBuffer;
using testing::RandomFloats;

bool BitEqual(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

class ElementwiseTest : public ::testing::TestWithParam<std::tuple<int, std::string>> {
 protected:
  int threads() const { return std::get<0>(GetParam()); }
  const std::string& target() const { return std::get<1>(GetParam()); }
};

TEST_P(ElementwiseTest, AddMatchesRefExactly) {
  const testing::ScopedTarget scoped_target(target());
  ASSERT_TRUE(scoped_target.ok()) << target();
  ThreadPool pool(threads());
  uint32_t seed = 1;
  for (int64_t n : {1, 7, 15, 16, 17, 1000, 1536, 200003}) {
    for (int mode = 0; mode < 4; ++mode) {  // 0: separate, 1: out = a, 2: out = b, 3: misaligned
      SCOPED_TRACE("n=" + std::to_string(n) + " mode=" + std::to_string(mode));
      const std::vector<float> av = RandomFloats(n, seed++, -5, 5), bv = RandomFloats(n, seed++);
      std::vector<float> ref(static_cast<size_t>(n));
      ref::Add(pool, av.data(), bv.data(), n, ref.data());
      FloatBuffer a(av, mode == 3), b(bv, mode == 3), out(n, mode == 3);
      float* dst = mode == 1 ? a.data() : mode == 2 ? b.data() : out.data();
      cpu::Add(pool, a.data(), b.data(), n, dst);
      ASSERT_TRUE(BitEqual(std::vector<float>(dst, dst + n), ref));
    }
  }
}

TEST_P(ElementwiseTest, ScaleMatchesRefExactly) {
  const testing::ScopedTarget scoped_target(target());
  ASSERT_TRUE(scoped_target.ok()) << target();
  ThreadPool pool(threads());
  uint32_t seed = 1000;
  for (int64_t n : {1, 7, 15, 16, 17, 1000, 1536, 200003}) {
    for (bool misalign : {false, true}) {
      SCOPED_TRACE("n=" + std::to_string(n) + " misalign=" + std::to_string(misalign));
      const std::vector<float> xv = RandomFloats(n, seed++, -5, 5);
      std::vector<float> ref = xv;
      ref::Scale(pool, ref.data(), n, 0.37f);
      FloatBuffer x(xv, misalign);
      cpu::Scale(pool, x.data(), n, 0.37f);
      ASSERT_TRUE(BitEqual(x.ToVector(n), ref));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(PoolsTargets, ElementwiseTest,
                         ::testing::Combine(::testing::Values(1, 3),
                                            ::testing::ValuesIn(testing::Targets())),
                         testing::ParamNames());

}  // namespace
}  // namespace g4
