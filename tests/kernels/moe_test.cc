// The Moe cases (moe_test.h) on the CPU kernels, pools of 1 and 3 threads on every Highway
// target this machine runs; and the CPU's own: cpu::MoeQ8a against the experts' own
// int8-activation matmuls (ref::MatMulQ8a); separate gate and up stacks giving exactly the fused
// stack's result; which stacks get panels; and the router's tie order, torch.topk's.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/kernels.h"
#include "kernels/ref/kernels.h"
#include "kernels/moe_test.h"
#include "kernels/moe_test_util.h"
#include "kernels/test_util.h"
#include "ops/matmul_q8a.h"

namespace g4 {
namespace testing {

INSTANTIATE_TEST_SUITE_P(Cpu, MoeTest, ::testing::ValuesIn(CpuOpBackends()), OpBackendName);

}  // namespace testing

namespace {

using testing::QuantStack;
using testing::QuantizeStack;
using testing::RandomFloats;
using testing::StoredTensor;

// MoeArgs over the stacks gate_up and down (stored, quantized, or with panels set).
MoeArgs StackArgs(const std::vector<float>& logits, const std::vector<float>& x,
                  const TensorView& gate_up, const TensorView& down, const StoredTensor& scale,
                  int64_t R, int k) {
  MoeArgs a;
  a.logits = logits.data(), a.x = x.data(), a.gate_up = &gate_up, a.down = &down;
  a.per_expert_scale = &scale.view(), a.R = R, a.top_k = k;
  return a;
}

// What MoeQ8a must compute: the routing, then each chosen expert's matmuls with int8
// activations (ref::MatMulQ8a), gelu_tanh(gate) * up between them, weighted and summed.
std::vector<float> MoeOverQ8aMatMuls(const MoeArgs& a) {
  ThreadPool pool(1);
  const int64_t H = a.hidden(), I = a.width();
  std::vector<float> out(static_cast<size_t>(a.R * H), 0.0f), gu(2 * I), act(I), y(H);
  MoeRouteQueue queue;
  std::vector<int32_t> ids(static_cast<size_t>(a.top_k));
  std::vector<float> w(ids.size());
  for (int64_t r = 0; r < a.R; ++r) {
    MoeRoute(a, r, queue, ids.data(), w.data());
    for (int j = 0; j < a.top_k; ++j) {
      ref::MatMulQ8a(pool, ExpertRows(*a.gate_up, ids[j], 0, 2 * I), a.x + r * H, 1, gu.data());
      ref::GeluMul(pool, gu.data(), gu.data() + I, 1, I, I, act.data());
      ref::MatMulQ8a(pool, ExpertDown(a, ids[j]), act.data(), 1, y.data());
      for (int64_t h = 0; h < H; ++h) out[static_cast<size_t>(r * H + h)] += w[j] * y[h];
    }
  }
  return out;
}

// The int8-activation table's Moe runs every expert matmul through cpu::MatMulQ8a, side by side
// for a decode row and grouped for a batch, on pools of 1 and 3, with the stacks as stored and
// packed into panels as the loader packs them (where this CPU packs the kind: each expert's
// slice reads its own panels). Its distance from the f32 kernel (cpu::Moe) is printed: the
// tolerance sits well below it, so the test tells the two paths apart.
TEST(MoeCpu, Q8aMatchesTheExpertsInt8ActivationMatmuls) {
  for (const auto& [kind, H, I] : std::vector<std::tuple<QuantKind, int64_t, int64_t>>{
           {QuantKind::kQ4_0, 96, 64}, {QuantKind::kQ8_0, 160, 32}, {QuantKind::kQ6_K, 256, 256}}) {
    const int64_t E = 6;
    const int k = 3;
    const QuantStack gu =
        QuantizeStack(RandomFloats(E * 2 * I * H, 13, -0.3f, 0.3f), {E, 2 * I, H}, kind);
    const QuantStack dn = QuantizeStack(RandomFloats(E * H * I, 14, -0.3f, 0.3f), {E, H, I}, kind);
    const StoredTensor scale(RandomFloats(E, 15, 0.5f, 1.5f), DType::kF32, {E}, false);
    ThreadPool pack_pool(1);
    const PackedWeight gu_panels = cpu::PackQ8aWeight(pack_pool, gu.view);
    const PackedWeight dn_panels = cpu::PackQ8aWeight(pack_pool, dn.view);
    TensorView gu_packed = gu.view, dn_packed = dn.view;
    SetPanels(gu_panels, &gu_packed);
    SetPanels(dn_panels, &dn_packed);
    const bool packed = gu_panels.panels != nullptr;
    EXPECT_EQ(packed, dn_panels.panels != nullptr);
    for (int64_t R : {1, 9}) {
      const std::vector<float> logits = RandomFloats(R * E, 16, -3.0f, 3.0f);
      const std::vector<float> x = RandomFloats(R * H, 17, -2.0f, 2.0f);
      MoeArgs a = StackArgs(logits, x, gu.view, dn.view, scale, R, k);
      const std::vector<float> want = MoeOverQ8aMatMuls(a);
      for (int threads : {1, 3}) {
        SCOPED_TRACE(std::string(QuantKindName(kind)) + " R=" + std::to_string(R) +
                     " threads=" + std::to_string(threads));
        ThreadPool pool(threads);
        std::vector<float> q8(want.size()), exact(want.size()), panels(want.size(), NAN);
        a.out = q8.data();
        cpu::MoeQ8a(pool, a);
        a.out = exact.data();
        cpu::Moe(pool, a);
        const double err = testing::MaxRowError(q8, want, H);
        const double exact_err = testing::MaxRowError(exact, want, H);
        double panel_err = 0;
        if (packed) {
          MoeArgs p = a;
          p.gate_up = &gu_packed, p.down = &dn_packed, p.out = panels.data();
          cpu::MoeQ8a(pool, p);
          panel_err = testing::MaxRowError(panels, want, H);
        }
        std::printf("%s R=%lld threads=%d: MoeQ8a %.2e (packed %s %.2e), f32 Moe %.2e from the "
                    "int8 matmuls\n",
                    QuantKindName(kind), static_cast<long long>(R), threads, err,
                    packed ? "yes" : "no", panel_err, exact_err);
        EXPECT_LE(err, 1e-4);
        EXPECT_LE(panel_err, 1e-4);
        EXPECT_GT(exact_err, 10 * 1e-4);
      }
    }
  }
}

// W4A16 stacks (int4 groups of 32) take int8 activations only as the Q4_0 panels the loader packs
// (kernels/cpu/matmul_q8a_int4.h): packed, MoeQ8a is the experts' int8-activation matmuls on
// them (far from the f32 Moe); as stored, MoeQ8a is the f32 Moe bit for bit.
TEST(MoeCpu, Int4StacksTakeInt8ActivationsOnlyOnPanels) {
  const int64_t E = 6, H = 96, I = 64;
  const int k = 3;
  const QuantStack gu = QuantizeStack(RandomFloats(E * 2 * I * H, 23, -0.3f, 0.3f),
                                      {E, 2 * I, H}, QuantKind::kInt4Group);
  const QuantStack dn =
      QuantizeStack(RandomFloats(E * H * I, 24, -0.3f, 0.3f), {E, H, I}, QuantKind::kInt4Group);
  const StoredTensor scale(RandomFloats(E, 25, 0.5f, 1.5f), DType::kF32, {E}, false);
  ThreadPool pack_pool(1);
  const PackedWeight gu_panels = cpu::PackQ8aWeight(pack_pool, gu.view);
  const PackedWeight dn_panels = cpu::PackQ8aWeight(pack_pool, dn.view);
  if (!gu_panels.panels) GTEST_SKIP() << "no panel kernel on this CPU";
  ASSERT_TRUE(dn_panels.panels);
  TensorView gu_packed = gu.view, dn_packed = dn.view;
  SetPanels(gu_panels, &gu_packed);
  SetPanels(dn_panels, &dn_packed);
  for (int64_t R : {1, 9}) {
    const std::vector<float> logits = RandomFloats(R * E, 26, -3.0f, 3.0f);
    const std::vector<float> x = RandomFloats(R * H, 27, -2.0f, 2.0f);
    MoeArgs a = StackArgs(logits, x, gu.view, dn.view, scale, R, k);
    MoeArgs p = StackArgs(logits, x, gu_packed, dn_packed, scale, R, k);
    const std::vector<float> want = MoeOverQ8aMatMuls(p);
    for (int threads : {1, 3}) {
      SCOPED_TRACE("R=" + std::to_string(R) + " threads=" + std::to_string(threads));
      ThreadPool pool(threads);
      std::vector<float> panels(want.size(), NAN), stored(want.size()), exact(want.size());
      p.out = panels.data();
      cpu::MoeQ8a(pool, p);
      a.out = stored.data();
      cpu::MoeQ8a(pool, a);
      a.out = exact.data();
      cpu::Moe(pool, a);
      EXPECT_LE(testing::MaxRowError(panels, want, H), 1e-4);
      EXPECT_GT(testing::MaxRowError(exact, want, H), 10 * 1e-4);
      EXPECT_EQ(stored, exact);
    }
  }
}

// llama.cpp's other layout, ffn_gate_exps + ffn_up_exps: the same experts as two [E, I, H]
// stacks give exactly the fused [E, 2I, H] stack's output, on both kernels.
TEST(MoeCpu, SeparateGateAndUpStacksEqualTheFusedStack) {
  const int64_t E = 6, H = 23, I = 9;
  ThreadPool pool(2);
  const std::vector<float> fused = RandomFloats(E * 2 * I * H, 8, -0.3f, 0.3f);
  std::vector<float> gate, up;
  testing::SplitGateUp(fused, E, I, H, &gate, &up);
  const StoredTensor gate_up(fused, DType::kBF16, {E, 2 * I, H}, false);
  const StoredTensor gate_stack(gate, DType::kBF16, {E, I, H}, true);
  const StoredTensor up_stack(up, DType::kBF16, {E, I, H}, false);
  const StoredTensor down(RandomFloats(E * H * I, 9, -0.3f, 0.3f), DType::kBF16, {E, H, I},
                          false);
  const StoredTensor scale(RandomFloats(E, 10, 0.5f, 1.5f), DType::kF32, {E}, false);
  for (int64_t R : {1, 5}) {  // 1: the fused stack's gate and up rows as one matmul
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
      EXPECT_EQ(one, two) << "R=" << R;
    }
  }
}

// A stack whose experts do not start on a 16-row panel is left as stored (a slice could not
// find its panels); one whose experts do is packed where the CPU packs the kind.
TEST(MoeCpu, OnlyStacksOfWholePanelsArePacked) {
  ThreadPool pool(1);
  const QuantStack odd =
      QuantizeStack(RandomFloats(3 * 24 * 64, 21), {3, 24, 64}, QuantKind::kQ4_0);
  EXPECT_EQ(cpu::PackQ8aWeight(pool, odd.view).panels, nullptr);
  const QuantStack whole =
      QuantizeStack(RandomFloats(3 * 32 * 64, 22), {3, 32, 64}, QuantKind::kQ4_0);
  const TensorView flat(whole.view.data, whole.view.dtype, {96, 64}, whole.view.quant);
  EXPECT_EQ(cpu::PackQ8aWeight(pool, whole.view).panels != nullptr,
            cpu::PackQ8aWeight(pool, flat).panels != nullptr);
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
