// Add and Scale (ops/elementwise.h) against their ref twins on every backend (op_backend.h): one
// f32 add or multiply per element everywhere, so the results are bit-identical. Odd lengths
// (SIMD tails), aliasing (out = a, out = b), misaligned buffers.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/op_backend.h"
#include "kernels/ref/kernels.h"
#include "kernels/test_util.h"

namespace g4::testing {

inline bool BitEqual(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

class ElementwiseTest : public OpBackendTest {};

TEST_P(ElementwiseTest, AddMatchesRefExactly) {
  uint32_t seed = 1;
  for (int64_t n : {1, 7, 15, 16, 17, 1000, 1536, 200003}) {
    for (int mode = 0; mode < 4; ++mode) {  // 0: separate, 1: out = a, 2: out = b, 3: misaligned
      SCOPED_TRACE("n=" + std::to_string(n) + " mode=" + std::to_string(mode));
      const std::vector<float> av = RandomFloats(n, seed++, -5, 5), bv = RandomFloats(n, seed++);
      std::vector<float> ref(static_cast<size_t>(n));
      ref::Add(pool(), av.data(), bv.data(), n, ref.data());
      FloatBuffer a(av, mode == 3), b(bv, mode == 3), out(n, mode == 3);
      float* dst = mode == 1 ? a.data() : mode == 2 ? b.data() : out.data();
      ops().add(pool(), a.data(), b.data(), n, dst);
      ASSERT_TRUE(BitEqual(std::vector<float>(dst, dst + n), ref));
    }
  }
}

TEST_P(ElementwiseTest, ScaleMatchesRefExactly) {
  uint32_t seed = 1000;
  for (int64_t n : {1, 7, 15, 16, 17, 1000, 1536, 200003}) {
    for (bool misalign : {false, true}) {
      SCOPED_TRACE("n=" + std::to_string(n) + " misalign=" + std::to_string(misalign));
      const std::vector<float> xv = RandomFloats(n, seed++, -5, 5);
      std::vector<float> ref = xv;
      ref::Scale(pool(), ref.data(), n, 0.37f);
      FloatBuffer x(xv, misalign);
      ops().scale(pool(), x.data(), n, 0.37f);
      ASSERT_TRUE(BitEqual(x.ToVector(n), ref));
    }
  }
}

}  // namespace g4::testing
