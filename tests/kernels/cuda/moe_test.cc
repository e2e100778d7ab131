// cuda::Moe (routing, bucketing, expert tiles and combine on the device) against ref::Moe (f64,
// MoeRoute's routing) on random tie-free router scores: the three float dtypes with odd sizes,
// rows enough for several tiles per expert, 128 experts of which 8 are chosen (the 26B-A4B
// routing), int4 / int8 group stacks (the W4A16 export), separate gate and up stacks, GGUF-block
// stacks (the host fallback), and experts nobody chose holding NaN.
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/cuda/cuda_test_util.h"
#include "kernels/cuda/staged_ops.h"
#include "kernels/moe_test_util.h"
#include "kernels/ref/kernels.h"
#include "kernels/test_util.h"

namespace g4::cuda {
namespace {

using g4::testing::MaxRowError;
using g4::testing::QuantizeStack;
using g4::testing::QuantStack;
using g4::testing::RandomFloats;
using g4::testing::StoredTensor;

class CudaMoeTest : public testing::CudaOpTest {
 protected:
  // cuda::Moe and ref::Moe on `a` (out unset); returns the row error.
  double Run(MoeArgs a) {
    std::vector<float> out(static_cast<size_t>(a.R * a.hidden())), ref(out.size());
    a.out = out.data();
    staged::Ops().moe(pool_, a);
    a.out = ref.data();
    ref::Moe(pool_, a);
    return MaxRowError(out, ref, a.hidden());
  }
};

MoeArgs Args(const std::vector<float>& logits, const std::vector<float>& x, int64_t R, int k,
             const TensorView& gate_up, const TensorView& down, const TensorView& scale) {
  MoeArgs a;
  a.logits = logits.data(), a.x = x.data(), a.gate_up = &gate_up, a.down = &down;
  a.per_expert_scale = &scale, a.R = R, a.top_k = k;
  return a;
}

TEST_F(CudaMoeTest, FloatExpertsMatchRef) {
  uint32_t seed = 31;
  // E, k, H, I; R = 1 (decode), 5, and 40 (several tiles of 8 slots per expert).
  for (const auto& [E, k, H, I] : std::vector<std::tuple<int64_t, int, int64_t, int64_t>>{
           {5, 2, 19, 7}, {8, 3, 64, 16}, {3, 3, 300, 9}, {128, 8, 96, 40}}) {
    for (DType dtype : g4::testing::kFloatDTypes) {
      const StoredTensor gu(RandomFloats(E * 2 * I * H, ++seed, -0.3f, 0.3f), dtype,
                            {E, 2 * I, H}, false);
      const StoredTensor dn(RandomFloats(E * H * I, ++seed, -0.3f, 0.3f), dtype, {E, H, I}, true);
      const StoredTensor scale(RandomFloats(E, ++seed, 0.5f, 1.5f), dtype, {E}, false);
      for (int64_t R : {1, 5, 40}) {
        SCOPED_TRACE(::testing::Message() << "E=" << E << " k=" << k << " H=" << H << " I=" << I
                                          << " R=" << R << " " << DTypeName(dtype));
        const std::vector<float> logits = RandomFloats(R * E, ++seed, -3.0f, 3.0f);
        const std::vector<float> x = RandomFloats(R * H, ++seed, -2.0f, 2.0f);
        EXPECT_LE(Run(Args(logits, x, R, k, gu.view(), dn.view(), scale.view())), 2e-5);
      }
      ReleaseDeviceMemory();  // the stacks die here; the next ones may reuse their addresses
    }
  }
}

// Quantized stacks: int4 / int8 groups on the device kernels, GGUF Q8_0 through the host
// fallback; then the same experts as separate gate and up stacks.
TEST_F(CudaMoeTest, QuantizedAndSplitStacksMatchRef) {
  const int64_t E = 6, H = 64, I = 32, R = 11;
  const int k = 2;
  const std::vector<float> logits = RandomFloats(R * E, 3, -3.0f, 3.0f);
  const std::vector<float> x = RandomFloats(R * H, 4, -2.0f, 2.0f);
  const StoredTensor scale(RandomFloats(E, 5, 0.5f, 1.5f), DType::kF32, {E}, false);
  const std::vector<float> gu_f = RandomFloats(E * 2 * I * H, 6, -0.3f, 0.3f);
  const std::vector<float> dn_f = RandomFloats(E * H * I, 7, -0.3f, 0.3f);
  for (QuantKind kind : {QuantKind::kInt4Group, QuantKind::kInt8Group, QuantKind::kQ8_0}) {
    SCOPED_TRACE(QuantKindName(kind));
    const QuantStack gu = QuantizeStack(gu_f, {E, 2 * I, H}, kind);
    const QuantStack dn = QuantizeStack(dn_f, {E, H, I}, kind);
    EXPECT_EQ(MoeOnDevice(Args(logits, x, R, k, gu.view, dn.view, scale.view())),
              kind != QuantKind::kQ8_0);
    EXPECT_LE(Run(Args(logits, x, R, k, gu.view, dn.view, scale.view())), 2e-5);
    ReleaseDeviceMemory();
  }
  std::vector<float> gate, up;
  for (int64_t e = 0; e < E; ++e) {
    const auto expert = gu_f.begin() + e * 2 * I * H;
    gate.insert(gate.end(), expert, expert + I * H);
    up.insert(up.end(), expert + I * H, expert + 2 * I * H);
  }
  const StoredTensor g(gate, DType::kBF16, {E, I, H}, false);
  const StoredTensor u(up, DType::kBF16, {E, I, H}, true);
  const StoredTensor dn(dn_f, DType::kBF16, {E, H, I}, false);
  MoeArgs a = Args(logits, x, R, k, g.view(), dn.view(), scale.view());
  a.up = &u.view();
  EXPECT_LE(Run(a), 2e-5);
}

// Experts 1 and 4 win every row; the others hold NaN, which no kernel may read.
TEST_F(CudaMoeTest, UnchosenExpertsAreNeverRead) {
  g4::testing::UnchosenNanCase c(6, 33, 11, 20);
  EXPECT_LE(Run(c.args), 2e-5);
}

}  // namespace
}  // namespace g4::cuda
