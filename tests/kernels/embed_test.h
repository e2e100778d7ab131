// Embed (ops/embed.h) against ref::Embed on every backend (op_backend.h): every float table
// dtype and every GGUF block kind (token_embd / per_layer_token_embd are Q6_K in Google's QAT
// GGUFs; Q8_0 and Q4_0 in community files), odd widths, a one-row table, repeated and boundary
// ids, misaligned tables and outputs. The comparison is exact (bitwise equal floats): widening
// F32/BF16/F16 to f32 is exact, GGUF blocks dequantize with core/gguf_blocks.h everywhere (a
// device gathers them on the host), and the ref's f64 product of two f32 values rounded to f32
// is the correctly rounded f32 product every kernel computes.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/gguf_test_util.h"
#include "kernels/op_backend.h"
#include "kernels/ref/kernels.h"
#include "kernels/test_util.h"

namespace g4::testing {

// T ids into V rows: random, with the last row first, the first row third and a repeat last.
inline std::vector<int32_t> EmbedIds(int64_t T, int64_t V, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> ids(static_cast<size_t>(T));
  for (auto& id : ids) id = static_cast<int32_t>(rng() % V);
  ids[0] = static_cast<int32_t>(V - 1);
  if (T > 2) ids[2] = 0;
  if (T > 1) ids[T - 1] = ids[0];
  return ids;
}

// ops.embed of `table` (the rows ids) into a buffer misaligned or not, against the ref: exact.
inline void ExpectEmbedMatchesRef(const OpTable& ops, ThreadPool& pool, const TensorView& table,
                                  const std::vector<int32_t>& ids, float scale, bool misalign) {
  const int64_t T = static_cast<int64_t>(ids.size()), D = table.dim(1);
  FloatBuffer out(T * D, misalign);
  std::vector<float> ref(static_cast<size_t>(T * D));
  ops.embed(pool, table, ids.data(), T, scale, out.data());
  ref::Embed(pool, table, ids.data(), T, scale, ref.data());
  const std::vector<float> got = out.ToVector(T * D);
  ASSERT_EQ(0, std::memcmp(got.data(), ref.data(), got.size() * sizeof(float)));
  // And the values are the table's: row ids[0], times scale.
  EXPECT_EQ(got[D - 1], table.at(ids[0] * D + D - 1) * scale);
}

class EmbedTest : public OpBackendTest {};

TEST_P(EmbedTest, MatchesRefExactly) {
  uint32_t seed = 1;
  for (DType dtype : kFloatDTypes) {
    for (int64_t V : {1, 50}) {
      for (int64_t D : {1, 7, 16, 33, 256, 1537}) {
        for (int64_t T : {1, 3, 17}) {
          for (bool misalign : {false, true}) {
            SCOPED_TRACE(std::string(DTypeName(dtype)) + " V=" + std::to_string(V) +
                         " D=" + std::to_string(D) + " T=" + std::to_string(T) +
                         " misalign=" + std::to_string(misalign));
            const StoredTensor table(RandomFloats(V * D, seed++, -3.0f, 3.0f), dtype, {V, D},
                                     misalign);
            const float scale = std::sqrt(static_cast<float>(D)) * 1.1f;
            ASSERT_NO_FATAL_FAILURE(ExpectEmbedMatchesRef(
                ops(), pool(), table.view(), EmbedIds(T, V, seed++), scale, misalign));
            WeightDied();  // the next table may reuse its address
          }
        }
      }
    }
  }
}

TEST_P(EmbedTest, GgufTablesMatchRefExactly) {
  uint32_t seed = 1;
  for (QuantKind kind : kGgufKinds) {
    const int64_t elems = GgufBlockFormat(kind).elems;
    for (int64_t D : {elems, 6 * elems}) {
      for (int64_t T : {1, 3, 17}) {
        for (bool misalign : {false, true}) {
          SCOPED_TRACE(std::string(QuantKindName(kind)) + " D=" + std::to_string(D) +
                       " T=" + std::to_string(T) + " misalign=" + std::to_string(misalign));
          const int64_t V = 37;
          const GgufTensor table(kind, V, D, misalign, seed++);
          const float scale = std::sqrt(static_cast<float>(D));
          ASSERT_NO_FATAL_FAILURE(ExpectEmbedMatchesRef(
              ops(), pool(), table.view(), EmbedIds(T, V, seed++), scale, misalign));
          WeightDied();
        }
      }
    }
  }
}

}  // namespace g4::testing
