// g4::cpu::Embed against g4::ref::Embed: every table dtype, odd widths, repeated and boundary
// ids, misaligned tables, pools of 1 and 3 threads. The comparison is exact (bitwise equal
// floats): widening F32/BF16/F16 to f32 is exact, and the ref's f64 product of two f32 values
// rounded to f32 is the correctly rounded f32 product the kernel computes.

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/kernels.h"
#include "kernels/gguf_test_util.h"
#include "kernels/ref/kernels.h"
#include "kernels/test_util.h"

namespace g4 {
namespace {

using testing::FloatBuffer;
using testing::RandomFloats;
using testing::StoredTensor;

class EmbedTest : public ::testing::TestWithParam<std::tuple<DType, int, std::string>> {};

TEST_P(EmbedTest, MatchesRefExactly) {
  const auto [dtype, threads, target] = GetParam();
  const testing::ScopedTarget scoped_target(target);
  ASSERT_TRUE(scoped_target.ok()) << target;
  ThreadPool pool(threads);
  uint32_t seed = 1;
  for (int64_t D : {1, 7, 16, 33, 256, 1536}) {
    for (int64_t T : {1, 3, 17}) {
      for (bool misalign : {false, true}) {
        SCOPED_TRACE("D=" + std::to_string(D) + " T=" + std::to_string(T) +
                     " misalign=" + std::to_string(misalign));
        const int64_t V = 50;
        const StoredTensor table(RandomFloats(V * D, seed++, -3.0f, 3.0f), dtype, {V, D}, misalign);
        std::mt19937 rng(seed++);
        std::vector<int32_t> ids(static_cast<size_t>(T));
        for (auto& id : ids) id = static_cast<int32_t>(rng() % V);
        ids[0] = V - 1;        // the last row
        if (T > 2) ids[2] = 0;  // the first row
        if (T > 1) ids[T - 1] = ids[0];  // repeats
        const float scale = std::sqrt(static_cast<float>(D)) * 1.1f;
        FloatBuffer out(T * D, misalign);
        std::vector<float> ref(static_cast<size_t>(T * D));
        cpu::Embed(pool, table.view(), ids.data(), T, scale, out.data());
        ref::Embed(pool, table.view(), ids.data(), T, scale, ref.data());
        const std::vector<float> got = out.ToVector(T * D);
        ASSERT_EQ(0, std::memcmp(got.data(), ref.data(), got.size() * sizeof(float)));
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(DTypesPoolsTargets, EmbedTest,
                         ::testing::Combine(::testing::ValuesIn(testing::kFloatDTypes),
                                            ::testing::Values(1, 3),
                                            ::testing::ValuesIn(testing::Targets())),
                         testing::ParamNames());

// GGUF block tables (token_embd / per_layer_token_embd are Q6_K in Google's QAT GGUFs; Q8_0 and
// Q4_0 in community files): every kind, rows of 1 and several blocks, boundary and repeated ids,
// misaligned tables, every target; exact, since both dequantize with core/gguf_blocks.h and
// round the same f32 product.
class GgufEmbedTest : public ::testing::TestWithParam<std::tuple<QuantKind, std::string>> {};

TEST_P(GgufEmbedTest, MatchesRefExactly) {
  const auto [kind, target] = GetParam();
  const testing::ScopedTarget scoped_target(target);
  ASSERT_TRUE(scoped_target.ok()) << target;
  ThreadPool pool(3);
  const int64_t elems = GgufBlockFormat(kind).elems;
  uint32_t seed = 1;
  for (int64_t D : {elems, 6 * elems}) {
    for (int64_t T : {1, 3, 17}) {
      for (bool misalign : {false, true}) {
        SCOPED_TRACE("D=" + std::to_string(D) + " T=" + std::to_string(T) + " misalign=" + std::to_string(misalign));
        const int64_t V = 37;
        const testing::GgufTensor table(kind, V, D, misalign, seed++);
        std::mt19937 rng(seed++);
        std::vector<int32_t> ids(static_cast<size_t>(T));
        for (auto& id : ids) id = static_cast<int32_t>(rng() % V);
        ids[0] = V - 1;
        if (T > 2) ids[2] = 0;
        if (T > 1) ids[T - 1] = ids[0];
        const float scale = std::sqrt(static_cast<float>(D));
        FloatBuffer out(T * D, misalign);
        std::vector<float> ref(static_cast<size_t>(T * D));
        cpu::Embed(pool, table.view(), ids.data(), T, scale, out.data());
        ref::Embed(pool, table.view(), ids.data(), T, scale, ref.data());
        const std::vector<float> got = out.ToVector(T * D);
        ASSERT_EQ(0, std::memcmp(got.data(), ref.data(), got.size() * sizeof(float)));
        // And the values are the table's: row ids[0] dequantized, times scale.
        EXPECT_EQ(got[D - 1], table.view().at(ids[0] * D + D - 1) * scale);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(KindsTargets, GgufEmbedTest,
                         ::testing::Combine(::testing::ValuesIn(testing::kGgufKinds),
                                            ::testing::ValuesIn(testing::Targets())),
                         testing::ParamNames());

}  // namespace
}  // namespace g4
