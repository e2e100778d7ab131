// g4::cpu::Moe (experts grouped by expert over cpu::MatMul) against g4::ref::Moe (row by row,
// f64) on random inputs of odd sizes, the three float weight dtypes and pools of 1 and 3
// threads, and on quantized expert stacks (GGUF blocks, int4 groups); separate gate and up
// stacks give the fused stack's result; experts nobody chose are never read; and the router's
// tie order is torch.topk's.
#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/kernels.h"
#include "kernels/ref/kernels.h"
#include "kernels/moe_test_util.h"
#include "kernels/test_util.h"

namespace g4 {
namespace {

using testing::QuantStack;
using testing::QuantizeStack;
using testing::RandomFloats;
using testing::StoredTensor;

struct Experts {
  Experts(int64_t E, int64_t H, int64_t I, DType dtype, uint32_t seed)
      : gate_up(RandomFloats(E * 2 * I * H, seed, -0.3f, 0.3f), dtype, {E, 2 * I, H}, true),
        down(RandomFloats(E * H * I, seed + 1, -0.3f, 0.3f), dtype, {E, H, I}, false),
        scale(RandomFloats(E, seed + 2, 0.5f, 1.5f), DType::kF32, {E}, false) {}
  MoeArgs Args(const std::vector<float>& logits, const std::vector<float>& x, int64_t R, int k,
               float* out) const {
    MoeArgs a;
    a.logits = logits.data();
    a.x = x.data();
    a.gate_up = &gate_up.view();
    a.down = &down.view();
    a.per_expert_scale = &scale.view();
    a.R = R;
    a.top_k = k;
    a.out = out;
    return a;
  }
  StoredTensor gate_up, down, scale;
};

class MoeTest : public ::testing::TestWithParam<std::tuple<DType, int>> {};

TEST_P(MoeTest, CpuMatchesRef) {
  const auto [dtype, threads] = GetParam();
  ThreadPool pool(threads);
  uint32_t seed = 11;
  // E, k, H, I: odd sizes, top-1, k = E, and more rows than experts.
  for (const auto& [E, k, H, I] : std::vector<std::tuple<int64_t, int, int64_t, int64_t>>{
           {5, 2, 19, 7}, {8, 3, 64, 16}, {3, 3, 33, 9}, {7, 1, 17, 5}}) {
    const Experts ex(E, H, I, dtype, seed);
    for (int64_t R : {1, 4, 17}) {
      SCOPED_TRACE("E=" + std::to_string(E) + " k=" + std::to_string(k) + " H=" +
                   std::to_string(H) + " I=" + std::to_string(I) + " R=" + std::to_string(R));
      const std::vector<float> logits = RandomFloats(R * E, seed + 3, -3.0f, 3.0f);
      const std::vector<float> x = RandomFloats(R * H, seed + 4, -2.0f, 2.0f);
      std::vector<float> out(static_cast<size_t>(R * H)), ref(out.size());
      ref::Moe(pool, ex.Args(logits, x, R, k, ref.data()));
      cpu::Moe(pool, ex.Args(logits, x, R, k, out.data()));
      EXPECT_LE(testing::MaxRowError(out, ref, H), 2e-5);
      seed += 10;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(DTypesPools, MoeTest,
                         ::testing::Combine(::testing::ValuesIn(testing::kFloatDTypes),
                                            ::testing::Values(1, 3)),
                         testing::ParamNames());

// GGUF expert stacks ([in, out, n_expert] blocks along H for gate/up, along I for down), W4A16
// int4 groups and int8 groups: cpu::Moe reads the slices ExpertRows cuts out as ref::Moe does.
TEST(MoeTest, QuantizedExpertsMatchRef) {
  ThreadPool pool(3);
  for (const auto& [kind, H, I] : std::vector<std::tuple<QuantKind, int64_t, int64_t>>{
           {QuantKind::kQ4_0, 64, 32}, {QuantKind::kQ8_0, 96, 32},
           {QuantKind::kQ6_K, 256, 256}, {QuantKind::kInt4Group, 64, 96},
           {QuantKind::kInt8Group, 32, 64}}) {
    const int64_t E = 5, R = 7;
    const int k = 2;
    SCOPED_TRACE("kind " + std::to_string(static_cast<int>(kind)) + " H=" + std::to_string(H));
    const QuantStack gu =
        QuantizeStack(RandomFloats(E * 2 * I * H, 3, -0.3f, 0.3f), {E, 2 * I, H}, kind);
    const QuantStack dn = QuantizeStack(RandomFloats(E * H * I, 4, -0.3f, 0.3f), {E, H, I}, kind);
    const StoredTensor scale(RandomFloats(E, 5, 0.5f, 1.5f), DType::kF32, {E}, false);
    const std::vector<float> logits = RandomFloats(R * E, 6, -3.0f, 3.0f);
    const std::vector<float> x = RandomFloats(R * H, 7, -2.0f, 2.0f);
    MoeArgs a;
    a.logits = logits.data(), a.x = x.data(), a.gate_up = &gu.view, a.down = &dn.view;
    a.per_expert_scale = &scale.view(), a.R = R, a.top_k = k;
    std::vector<float> out(static_cast<size_t>(R * H)), ref(out.size());
    a.out = out.data();
    cpu::Moe(pool, a);
    a.out = ref.data();
    ref::Moe(pool, a);
    EXPECT_LE(testing::MaxRowError(out, ref, H), 2e-5);
  }
}

// llama.cpp's other layout, ffn_gate_exps + ffn_up_exps: the same experts as two [E, I, H]
// stacks give exactly the fused [E, 2I, H] stack's output, on both kernels.
TEST(MoeTest, SeparateGateAndUpStacksEqualTheFusedStack) {
  const int64_t E = 6, H = 23, I = 9, R = 5;
  ThreadPool pool(2);
  const std::vector<float> fused = RandomFloats(E * 2 * I * H, 8, -0.3f, 0.3f);
  std::vector<float> gate, up;
  for (int64_t e = 0; e < E; ++e) {
    const auto expert = fused.begin() + e * 2 * I * H;
    gate.insert(gate.end(), expert, expert + I * H);
    up.insert(up.end(), expert + I * H, expert + 2 * I * H);
  }
  const StoredTensor gate_up(fused, DType::kBF16, {E, 2 * I, H}, false);
  const StoredTensor gate_stack(gate, DType::kBF16, {E, I, H}, true);
  const StoredTensor up_stack(up, DType::kBF16, {E, I, H}, false);
  const StoredTensor down(RandomFloats(E * H * I, 9, -0.3f, 0.3f), DType::kBF16, {E, H, I},
                          false);
  const StoredTensor scale(RandomFloats(E, 10, 0.5f, 1.5f), DType::kF32, {E}, false);
  const std::vector<float> logits = RandomFloats(R * E, 11, -3.0f, 3.0f);
  const std::vector<float> x = RandomFloats(R * H, 12, -2.0f, 2.0f);
  for (const MoeFn fn : {MoeFn{&cpu::Moe}, MoeFn{&ref::Moe}}) {
    MoeArgs a;
    a.logits = logits.data(), a.x = x.data(), a.down = &down.view();
    a.per_expert_scale = &scale.view(), a.R = R, a.top_k = 3;
    std::vector<float> one(static_cast<size_t>(R * H)), two(one.size());
    a.gate_up = &gate_up.view(), a.out = one.data();
    fn(pool, a);
    a.gate_up = &gate_stack.view(), a.up = &up_stack.view(), a.out = two.data();
    fn(pool, a);
    EXPECT_EQ(one, two);
  }
}

TEST(MoeTest, UnchosenExpertsAreNeverRead) {
  const int64_t H = 21, R = 9;
  ThreadPool pool(2);
  testing::UnchosenNanCase c(6, H, 11, R);
  MoeArgs a = c.args;
  std::vector<float> out(static_cast<size_t>(R * H)), ref(out.size());
  a.out = out.data();
  cpu::Moe(pool, a);
  a.out = ref.data();
  ref::Moe(pool, a);
  for (float v : out) ASSERT_TRUE(std::isfinite(v));
  EXPECT_LE(testing::MaxRowError(out, ref, H), 2e-5);
}

// The experts torch.topk (2.13.0, CPU) returned for rows of equal probabilities, recorded with
// torch.topk(torch.softmax(torch.zeros(n), -1), k).indices: the order depends on libstdc++'s
// selection algorithm, not on the index, and MoeRoute must reproduce it.
TEST(MoeRouteTest, TiesFollowTorchTopk) {
  struct Case {
    int64_t E;
    int k;
    std::vector<int32_t> torch_ids;
  };
  const Case cases[] = {{4, 2, {2, 3}}, {5, 3, {2, 4, 3}}, {6, 2, {3, 5}},
                        {8, 2, {6, 5}}, {128, 2, {0, 1}}, {128, 3, {86, 85, 84}}};
  for (const Case& c : cases) {
    SCOPED_TRACE("E=" + std::to_string(c.E) + " k=" + std::to_string(c.k));
    const std::vector<float> logits(static_cast<size_t>(c.E), 0.0f);
    const StoredTensor scale(std::vector<float>(static_cast<size_t>(c.E), 1.0f), DType::kF32,
                             {c.E}, false);
    const StoredTensor gate_up(std::vector<float>(static_cast<size_t>(c.E * 2), 0.0f),
                               DType::kF32, {c.E, 2, 1}, false);
    const StoredTensor down(std::vector<float>(static_cast<size_t>(c.E), 0.0f), DType::kF32,
                            {c.E, 1, 1}, false);
    MoeArgs a;
    a.logits = logits.data(), a.gate_up = &gate_up.view(), a.down = &down.view();
    a.per_expert_scale = &scale.view(), a.R = 1, a.top_k = c.k;
    std::vector<int32_t> ids(static_cast<size_t>(c.k));
    std::vector<float> w(ids.size());
    MoeRouteQueue queue;
    MoeRoute(a, 0, queue, ids.data(), w.data());
    EXPECT_EQ(ids, c.torch_ids);
    for (float v : w) EXPECT_FLOAT_EQ(v, 1.0f / static_cast<float>(c.k));
  }
}

}  // namespace
}  // namespace g4
