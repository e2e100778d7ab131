// cuda::Embed against ref::Embed: F32/BF16/F16 tables of odd shapes, repeated and boundary ids,
// the sqrt(D) scale. Widening is exact and the f32 product equals the ref's f64 product rounded
// to f32, so the results are bit-identical. A quantized table is gathered on the host (the CPU
// kernel) and must equal the ref too.
#include <cmath>
#include <random>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/cuda/cuda_test_util.h"
#include "kernels/cuda/staged_ops.h"
#include "kernels/ref/kernels.h"
#include "kernels/test_util.h"
#include "ops/quantize.h"

namespace g4::cuda {
namespace {

using testing::CudaOpTest;
using g4::testing::RandomFloats;
using g4::testing::StoredTensor;

class CudaEmbedTest : public CudaOpTest {};

TEST_F(CudaEmbedTest, MatchesRefExactlyForEveryFloatDType) {
  std::mt19937 rng(3);
  uint32_t seed = 60;
  for (DType dt : g4::testing::kFloatDTypes) {
    for (int64_t V : {1, 37}) {
      for (int64_t D : {1, 65, 1537}) {
        for (int64_t T : {1, 9}) {
          SCOPED_TRACE(::testing::Message() << DTypeName(dt) << " V=" << V << " D=" << D
                                            << " T=" << T);
          const StoredTensor table(RandomFloats(V * D, ++seed), dt, {V, D}, false);
          ASSERT_TRUE(EmbedOnDevice(table.view()));
          std::vector<int32_t> ids(static_cast<size_t>(T));
          std::uniform_int_distribution<int32_t> d(0, static_cast<int32_t>(V - 1));
          for (auto& id : ids) id = d(rng);
          ids.back() = static_cast<int32_t>(V - 1);
          const float scale = std::sqrt(static_cast<float>(D));
          std::vector<float> ref(static_cast<size_t>(T * D)), out(ref.size());
          ref::Embed(pool_, table.view(), ids.data(), T, scale, ref.data());
          staged::Ops().embed(pool_, table.view(), ids.data(), T, scale, out.data());
          EXPECT_EQ(out, ref);
          ReleaseDeviceMemory();  // table dies here: the next may reuse its address (kernels.h)
        }
      }
    }
  }
}

TEST_F(CudaEmbedTest, QuantizedTableIsGatheredOnTheHost) {
  const int64_t V = 11, D = 64;
  const std::vector<float> w = RandomFloats(V * D, 70);
  const StoredTensor f(w, DType::kF32, {V, D}, false);
  auto q = QuantizeWeight(pool_, f.view(), QuantKind::kInt8Group, D, DType::kF32);
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_FALSE(EmbedOnDevice(q->view));
  const std::vector<int32_t> ids = {3, 0, 10, 3};
  std::vector<float> ref(4 * D), out(ref.size());
  ref::Embed(pool_, q->view, ids.data(), 4, 2.0f, ref.data());
  staged::Ops().embed(pool_, q->view, ids.data(), 4, 2.0f, out.data());
  EXPECT_EQ(out, ref);
  EXPECT_EQ(CachedWeightBytes(), 0);
}

}  // namespace
}  // namespace g4::cuda
