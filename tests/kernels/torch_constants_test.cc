// The kernels' constants pinned by an outside source: values computed once with torch 2.13 and
// transformers 5.24 (the expressions are beside each table) and pasted here, so a constant
// changed in both the ref and the CPU kernels (which the other kernel tests compare with each
// other) still fails. Covers GELU-tanh, RMSNorm (eps inside the root, plain w, as
// Gemma4RMSNorm) and RoPE (NeoX half split, Gemma 4's default and proportional frequencies).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/kernels.h"
#include "kernels/ref/kernels.h"
#include "kernels/test_util.h"

namespace g4 {
namespace {

// torch.nn.functional.gelu(torch.tensor(kGeluX, dtype=torch.float64), approximate="tanh")
constexpr double kGeluX[] = {-5.0, -3.0, -1.5, -0.5, -0.1, 0.0, 0.1, 0.5, 1.0, 1.5, 3.0, 5.0};
constexpr double kGeluY[] = {
    -2.2917961972623857e-07, -0.0036373920817729943, -0.10042842301976707,
    -0.15428599017485606,    -0.046017248954564841,  0.0,
    0.053982751045435165,    0.34571400982514394,    0.84119199060827676,
    1.3995715769802328,      2.9963626079182268,     4.9999997708203807};
constexpr int kGeluN = sizeof(kGeluX) / sizeof(kGeluX[0]);

// x: [2, 8] f32, w: [8]. Row 0 is small (mean(x^2) ~ 7e-6), so eps = 1e-6 moves it by ~7%
// and eps outside the root or a (1 + w) weight would be far off.
//   torch.nn.functional.rms_norm(x.double(), (8,), weight=w.double(), eps=1e-6)
// (transformers' Gemma4RMSNorm(8, eps=1e-6) with weight w, in f32, agrees to 1e-7.)
constexpr float kNormX[] = {1e-3f, -2e-3f, 3e-3f, -4e-3f, 5e-4f, 2.5e-3f, -1.5e-3f, 0.0f,
                            0.5f,  -1.25f, 2.0f,  0.75f,  -3.0f, 1.0f,    0.25f,   -0.5f};
constexpr float kNormW[] = {0.5f, 2.0f, -1.0f, 1.5f, 0.25f, -0.75f, 3.0f, 1.0f};
constexpr double kNormY[] = {0.206835082,  -1.65468065,  -1.24101044, -2.48202098,
                             0.0517087704, -0.775631502, -1.86151566, 0.0,
                             0.173096887,  -1.73096887,  -1.3847751,  0.778935994,
                             -0.519290662, -0.519290662, 0.519290662, -0.346193775};
constexpr float kNormEps = 1e-6f;  // Gemma 4's rms_norm_eps

// RoPE on one head of D = 16, x[i] = ((i * 37) % 17 - 8) / 8. Frequencies from transformers:
//   rot = Gemma4TextRotaryEmbedding(Gemma4TextConfig(head_dim=16, global_head_dim=16))
//   inv = rot.sliding_attention_inv_freq  (default, theta 1e4)
//       / rot.full_attention_inv_freq     (proportional, theta 1e6, partial_rotary_factor 0.25:
//                                          2 of 8 pairs rotate, the exponent over all 16)
// and the rotation in f64 with transformers' own function:
//   f = pos * inv.double(); emb = torch.cat((f, f))
//   apply_rotary_pos_emb(x, emb.cos(), emb.sin())
constexpr int kRopeD = 16;
constexpr float kInvDefault[] = {1.0f,         0.316227764f,  0.100000001f, 0.0316227786f,
                                 0.00999999978f, 0.00316227786f, 0.00100000005f,
                                 0.000316227786f};
constexpr float kInvProportional[] = {1.0f, 0.177827939f, 0, 0, 0, 0, 0, 0};
constexpr int32_t kDefaultPos[] = {3, 1234};
constexpr double kDefaultY[][kRopeD] = {
    {1.0076325, -0.567383233, -0.423534254, 0.0297118243, 0.522271642, 0.878518135,
     -0.874996063, -0.500355531, -0.017370946, -0.362217154, 0.523205252, 1.00734414,
     -0.734664776, -0.36668227, -0.00262499619, 0.37452549},
    {0.87379158, -0.645599779, 0.640564139, -0.938942141, 0.318911803, -0.892358989,
     -0.289156921, -0.605060452, -0.502108827, -0.190593612, -0.206887854, 0.36607739,
     -0.843086747, -0.331580208, -0.82584095, 0.156610502}};
constexpr int32_t kProportionalPos[] = {3, 4321};
constexpr double kProportionalY[][kRopeD] = {
    {1.0076325, -0.66528444, -0.25, 0.125, 0.5, 0.875, -0.875, -0.5, -0.017370946,
     -0.102574918, 0.625, 1, -0.75, -0.375, 0, 0.375},
    {0.136975759, -0.0708075911, -0.25, 0.125, 0.5, 0.875, -0.875, -0.5, 0.998430088,
     -0.669411148, 0.625, 1, -0.75, -0.375, 0, 0.375}};

// f32 kernels: a few ulps of the value (the literals carry 9 significant digits).
double F32Tol(double expected) { return 4e-6 * std::fabs(expected) + 1e-8; }

TEST(TorchConstantsTest, RefGeluTanhIsTorchsTanhGelu) {
  for (int i = 0; i < kGeluN; ++i) {
    EXPECT_NEAR(ref::GeluTanh(kGeluX[i]), kGeluY[i], 1e-15 * std::max(1.0, std::fabs(kGeluX[i])))
        << "x=" << kGeluX[i];
  }
}

class TorchConstantsCpuTest : public ::testing::TestWithParam<std::string> {};

TEST_P(TorchConstantsCpuTest, GeluMulIsTorchsTanhGelu) {
  const testing::ScopedTarget scoped_target(GetParam());
  ASSERT_TRUE(scoped_target.ok()) << GetParam();
  ThreadPool pool(1);
  const std::vector<float> gate(kGeluX, kGeluX + kGeluN);
  const std::vector<float> up(kGeluN, 1.0f);
  std::vector<float> ref_out(kGeluN), cpu_out(kGeluN);
  ref::GeluMul(pool, gate.data(), up.data(), 1, kGeluN, kGeluN, ref_out.data());
  cpu::GeluMul(pool, gate.data(), up.data(), 1, kGeluN, kGeluN, cpu_out.data());
  for (int i = 0; i < kGeluN; ++i) {
    EXPECT_NEAR(ref_out[i], kGeluY[i], F32Tol(kGeluY[i])) << "ref, x=" << kGeluX[i];
    EXPECT_NEAR(cpu_out[i], kGeluY[i], F32Tol(kGeluY[i])) << "cpu, x=" << kGeluX[i];
  }
}

TEST_P(TorchConstantsCpuTest, RmsNormIsGemma4RmsNorm) {
  const testing::ScopedTarget scoped_target(GetParam());
  ASSERT_TRUE(scoped_target.ok()) << GetParam();
  ThreadPool pool(1);
  const TensorView w(kNormW, DType::kF32, {8});
  std::vector<float> ref_out(16), cpu_out(16);
  ref::RmsNorm(pool, kNormX, w, 2, 8, kNormEps, ref_out.data());
  cpu::RmsNorm(pool, kNormX, w, 2, 8, kNormEps, cpu_out.data());
  for (int i = 0; i < 16; ++i) {
    EXPECT_NEAR(ref_out[i], kNormY[i], F32Tol(kNormY[i])) << "ref, element " << i;
    EXPECT_NEAR(cpu_out[i], kNormY[i], F32Tol(kNormY[i])) << "cpu, element " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Targets, TorchConstantsCpuTest, ::testing::ValuesIn(testing::Targets()));

// Rotates the head at each position with `inv` through the ref Rope (the CPU backend's too,
// src/ops/backend.cc) and compares with transformers' rotation.
void ExpectRope(const float* inv, const int32_t* positions, const double (*expected)[kRopeD]) {
  ThreadPool pool(1);
  std::vector<float> x(2 * kRopeD);
  for (int t = 0; t < 2; ++t) {
    for (int i = 0; i < kRopeD; ++i) x[t * kRopeD + i] = static_cast<float>((i * 37) % 17 - 8) / 8;
  }
  ref::Rope(pool, x.data(), positions, /*T=*/2, /*H=*/1, kRopeD, inv);
  for (int t = 0; t < 2; ++t) {
    for (int i = 0; i < kRopeD; ++i) {
      // The angle is pos * inv in f64 on both sides, so only the f32 output rounds.
      EXPECT_NEAR(x[t * kRopeD + i], expected[t][i], 1e-6) << "pos " << positions[t] << " dim "
                                                           << i;
    }
  }
}

TEST(TorchConstantsTest, RopeDefaultIsTransformersRotation) {
  ExpectRope(kInvDefault, kDefaultPos, kDefaultY);
}

TEST(TorchConstantsTest, RopeProportionalIsTransformersRotation) {
  ExpectRope(kInvProportional, kProportionalPos, kProportionalY);
}

}  // namespace
}  // namespace g4
