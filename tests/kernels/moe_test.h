// Moe (ops/moe.h) against ref::Moe (row by row, f64, MoeRoute's routing) on every backend
// (op_backend.h), on random tie-free router scores: the three float weight dtypes with odd
// sizes, top-1, k = E, more rows than experts, rows enough for several CUDA tiles per expert,
// 128 experts of which 8 are chosen (the 26B-A4B routing); quantized expert stacks (GGUF blocks,
// which a device runs on the host; W4A16 int4 and int8 groups); separate gate and up stacks;
// experts nobody chose holding NaN, which no kernel may read. Tolerance 2e-5 of each row's
// largest |ref| (f32 matmuls and GELU against f64).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/moe_test_util.h"
#include "kernels/op_backend.h"
#include "kernels/ref/kernels.h"
#include "kernels/test_util.h"

namespace g4::testing {

class MoeTest : public OpBackendTest {
 protected:
  // The backend's Moe and ref::Moe on `a` (out unset); returns the row error.
  double Run(MoeArgs a) {
    std::vector<float> out(static_cast<size_t>(a.R * a.hidden())), ref(out.size());
    a.out = out.data();
    ops().moe(pool(), a);
    a.out = ref.data();
    ref::Moe(pool(), a);
    for (float v : out) EXPECT_TRUE(std::isfinite(v));
    return MaxRowError(out, ref, a.hidden());
  }
};

inline MoeArgs MoeCaseArgs(const std::vector<float>& logits, const std::vector<float>& x,
                           int64_t R, int k, const TensorView& gate_up, const TensorView& down,
                           const TensorView& scale) {
  MoeArgs a;
  a.logits = logits.data(), a.x = x.data(), a.gate_up = &gate_up, a.down = &down;
  a.per_expert_scale = &scale, a.R = R, a.top_k = k;
  return a;
}

TEST_P(MoeTest, FloatExpertsMatchRef) {
  uint32_t seed = 11;
  // E, k, H, I: odd sizes, top-1, k = E, and the 26B-A4B routing.
  for (const auto& [E, k, H, I] : std::vector<std::tuple<int64_t, int, int64_t, int64_t>>{
           {5, 2, 19, 7}, {8, 3, 64, 16}, {3, 3, 33, 9}, {7, 1, 17, 5}, {128, 8, 96, 40}}) {
    for (DType dtype : kFloatDTypes) {
      const StoredTensor gu(RandomFloats(E * 2 * I * H, ++seed, -0.3f, 0.3f), dtype,
                            {E, 2 * I, H}, true);
      const StoredTensor dn(RandomFloats(E * H * I, ++seed, -0.3f, 0.3f), dtype, {E, H, I},
                            false);
      const StoredTensor scale(RandomFloats(E, ++seed, 0.5f, 1.5f), DType::kF32, {E}, false);
      for (int64_t R : {1, 4, 17, 40}) {  // 40: several tiles of 8 slots per expert
        SCOPED_TRACE("E=" + std::to_string(E) + " k=" + std::to_string(k) + " H=" +
                     std::to_string(H) + " I=" + std::to_string(I) + " R=" + std::to_string(R) +
                     " " + DTypeName(dtype));
        const std::vector<float> logits = RandomFloats(R * E, ++seed, -3.0f, 3.0f);
        const std::vector<float> x = RandomFloats(R * H, ++seed, -2.0f, 2.0f);
        EXPECT_LE(Run(MoeCaseArgs(logits, x, R, k, gu.view(), dn.view(), scale.view())), 2e-5);
      }
      WeightDied();  // the stacks die here; the next ones may reuse their addresses
    }
  }
}

// GGUF expert stacks ([in, out, n_expert] blocks along H for gate/up, along I for down), W4A16
// int4 groups and int8 groups: the slices ExpertRows cuts out, read as ref::Moe reads them.
TEST_P(MoeTest, QuantizedExpertsMatchRef) {
  for (const auto& [kind, H, I] : std::vector<std::tuple<QuantKind, int64_t, int64_t>>{
           {QuantKind::kQ4_0, 64, 32}, {QuantKind::kQ8_0, 96, 32},
           {QuantKind::kQ6_K, 256, 256}, {QuantKind::kInt4Group, 64, 96},
           {QuantKind::kInt8Group, 32, 64}}) {
    const int64_t E = 5;
    const int k = 3;  // R = 1 with 3 threads: the CPU's experts side by side
    const QuantStack gu =
        QuantizeStack(RandomFloats(E * 2 * I * H, 3, -0.3f, 0.3f), {E, 2 * I, H}, kind);
    const QuantStack dn = QuantizeStack(RandomFloats(E * H * I, 4, -0.3f, 0.3f), {E, H, I}, kind);
    const StoredTensor scale(RandomFloats(E, 5, 0.5f, 1.5f), DType::kF32, {E}, false);
    for (int64_t R : {1, 7, 11}) {
      SCOPED_TRACE(std::string(QuantKindName(kind)) + " H=" + std::to_string(H) +
                   " R=" + std::to_string(R));
      const std::vector<float> logits = RandomFloats(R * E, 6, -3.0f, 3.0f);
      const std::vector<float> x = RandomFloats(R * H, 7, -2.0f, 2.0f);
      EXPECT_LE(Run(MoeCaseArgs(logits, x, R, k, gu.view, dn.view, scale.view())), 2e-5);
    }
    WeightDied();
  }
}

// llama.cpp's other layout, ffn_gate_exps + ffn_up_exps: two [E, I, H] stacks.
TEST_P(MoeTest, SeparateGateAndUpStacksMatchRef) {
  const int64_t E = 6, H = 23, I = 9;
  const std::vector<float> fused = RandomFloats(E * 2 * I * H, 8, -0.3f, 0.3f);
  std::vector<float> gate, up;
  SplitGateUp(fused, E, I, H, &gate, &up);
  const StoredTensor gate_stack(gate, DType::kBF16, {E, I, H}, true);
  const StoredTensor up_stack(up, DType::kBF16, {E, I, H}, false);
  const StoredTensor down(RandomFloats(E * H * I, 9, -0.3f, 0.3f), DType::kBF16, {E, H, I},
                          false);
  const StoredTensor scale(RandomFloats(E, 10, 0.5f, 1.5f), DType::kF32, {E}, false);
  for (int64_t R : {1, 5, 11}) {
    SCOPED_TRACE("R=" + std::to_string(R));
    const std::vector<float> logits = RandomFloats(R * E, 11, -3.0f, 3.0f);
    const std::vector<float> x = RandomFloats(R * H, 12, -2.0f, 2.0f);
    MoeArgs a = MoeCaseArgs(logits, x, R, 3, gate_stack.view(), down.view(), scale.view());
    a.up = &up_stack.view();
    EXPECT_LE(Run(a), 2e-5);
  }
}

// Experts 1 and 4 win every row; the others hold NaN, which no kernel may read.
TEST_P(MoeTest, UnchosenExpertsAreNeverRead) {
  UnchosenNanCase c(6, 33, 11, 20);
  EXPECT_LE(Run(c.args), 2e-5);
}

}  // namespace g4::testing
