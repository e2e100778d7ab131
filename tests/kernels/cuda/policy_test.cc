// The device policy (kernels/cuda/policy.h) for recorded descriptions of a T4, an L4, an A100
// and an H200: compute dtype, the W4A16 tile and attention plans sized from each card's shared
// memory, the policy line, and the refusals. Host-only: runs without a GPU.
#include "kernels/cuda/policy.h"

#include <gtest/gtest.h>

#include <string>

#include "kernels/cuda/recorded_devices.h"

namespace g4::cuda {
namespace {

using testing::A100_40GB;
using testing::H200;
using testing::kKiB;
using testing::NvidiaL4;
using testing::TeslaT4;

DevicePolicy PolicyOrDie(const DeviceInfo& d) {
  auto p = ChoosePolicy(d);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return p.ok() ? *p : DevicePolicy{};
}

bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(PolicyTest, ComputeDTypeIsF16OnTuringAndBf16FromAmpere) {
  EXPECT_EQ(PolicyOrDie(TeslaT4()).compute, DType::kF16);
  EXPECT_EQ(PolicyOrDie(A100_40GB()).compute, DType::kBF16);
  EXPECT_EQ(PolicyOrDie(NvidiaL4()).compute, DType::kBF16);
  EXPECT_EQ(PolicyOrDie(H200()).compute, DType::kBF16);
}

// griddepcontrol (programmatic dependent launch) exists from SM 9.0: the H200 only.
TEST(PolicyTest, ProgrammaticDependentLaunchFromHopper) {
  EXPECT_FALSE(PolicyOrDie(TeslaT4()).pdl);
  EXPECT_FALSE(PolicyOrDie(A100_40GB()).pdl);
  EXPECT_FALSE(PolicyOrDie(NvidiaL4()).pdl);
  EXPECT_TRUE(PolicyOrDie(H200()).pdl);
}

TEST(PolicyTest, EveryChoiceFitsTheCardsOptInSharedMemory) {
  for (const DeviceInfo& d : {TeslaT4(), NvidiaL4(), A100_40GB(), H200()}) {
    SCOPED_TRACE(d.name);
    const DevicePolicy p = PolicyOrDie(d);
    EXPECT_LE(p.w4a16_tile.smem_bytes, d.smem_per_block_optin);
    EXPECT_EQ(p.w4a16_tile.needs_optin, p.w4a16_tile.smem_bytes > d.smem_per_block);
    for (int64_t hd : kPolicyHeadDims) {
      const AttentionPlan* a = p.AttentionFor(hd);
      ASSERT_NE(a, nullptr);
      EXPECT_EQ(a->head_dim, hd);
      EXPECT_LE(a->smem_bytes, d.smem_per_block_optin);
      EXPECT_GT(a->bc, 0);
    }
    // The policy is exactly what the tile chooser gives the kernels at launch.
    auto tile = ChooseW4A16Tile(d.smem_per_block_optin, d.smem_per_block, d.cc(), 1536, 32);
    ASSERT_TRUE(tile.ok());
    EXPECT_EQ(tile->smem_bytes, p.w4a16_tile.smem_bytes);
  }
}

TEST(PolicyTest, TuringGetsSmallerTilesThanHopperAndNeverNeeds96KiB) {
  const DevicePolicy t4 = PolicyOrDie(TeslaT4());
  const DevicePolicy h200 = PolicyOrDie(H200());
  // T4, 64 KiB opt-in, at most 2 stages (no cp.async): the W4A16 128x128x32x2 needs
  // 2 * (2*128 + 2*128) * 40 * 2 = 81920 B > 64 KiB; 64x128x32x2 needs 61440 B. The dense GEMM
  // (one weight part) fits 128x128x32x2 in 2 * (2*128 + 128) * 40 * 2 = 61440 B.
  EXPECT_EQ(t4.w4a16_tile.bm, 64);
  EXPECT_EQ(t4.w4a16_tile.bn, 128);
  EXPECT_EQ(t4.w4a16_tile.stages, 2);
  EXPECT_EQ(t4.w4a16_tile.smem_bytes, 61440);
  EXPECT_EQ(t4.gemm_tile.bm, 128);
  EXPECT_EQ(t4.gemm_tile.smem_bytes, 61440);
  // H200, 227 KiB: the largest candidate, 3 stages = 122880 B (dense: 92160 B).
  EXPECT_EQ(h200.w4a16_tile.bm, 128);
  EXPECT_EQ(h200.w4a16_tile.stages, 3);
  EXPECT_EQ(h200.w4a16_tile.smem_bytes, 122880);
  EXPECT_EQ(h200.gemm_tile.stages, 3);
  EXPECT_EQ(h200.gemm_tile.smem_bytes, 92160);
  // Head dim 512 on a T4: bc 16 would need 2*16*512*4 + 4*2*16*4 = 66048 B > 65536, so bc 8.
  EXPECT_EQ(t4.AttentionFor(512)->bc, 8);
  EXPECT_LT(t4.AttentionFor(512)->smem_bytes, 96 * kKiB);
  EXPECT_GT(h200.AttentionFor(512)->bc, t4.AttentionFor(512)->bc);
}

TEST(PolicyTest, PolicyLineStatesTheDecision) {
  const std::string t4 = PolicyOrDie(TeslaT4()).ToString();
  EXPECT_TRUE(Contains(t4, "device=Tesla_T4 ")) << t4;
  EXPECT_TRUE(Contains(t4, " cc=7.5 ")) << t4;
  EXPECT_TRUE(Contains(t4, " sms=40 ")) << t4;
  EXPECT_TRUE(Contains(t4, " compute=f16 ")) << t4;
  EXPECT_TRUE(Contains(t4, " smem_optin=64KiB ")) << t4;
  EXPECT_TRUE(Contains(t4, " l2=4MiB ")) << t4;
  EXPECT_TRUE(Contains(t4, " gemm_tile=128x128x32x2(60KiB) ")) << t4;
  EXPECT_TRUE(Contains(t4, " w4a16_tile=64x128x32x2(60KiB) ")) << t4;
  EXPECT_TRUE(Contains(t4, " attn512=bc8(")) << t4;
  EXPECT_TRUE(Contains(t4, " pdl=off")) << t4;
  const std::string h200 = PolicyOrDie(H200()).ToString();
  EXPECT_TRUE(Contains(h200, " cc=9.0 ")) << h200;
  EXPECT_TRUE(Contains(h200, " compute=bf16 ")) << h200;
  EXPECT_TRUE(Contains(h200, " smem_optin=227KiB ")) << h200;
  EXPECT_TRUE(Contains(h200, " l2=50MiB ")) << h200;
  EXPECT_TRUE(Contains(h200, " mem=140.4GiB ")) << h200;
  EXPECT_TRUE(Contains(h200, " pdl=on")) << h200;
  EXPECT_TRUE(Contains(PolicyOrDie(NvidiaL4()).ToString(), " smem_optin=99KiB ")) << "L4";
  EXPECT_TRUE(Contains(PolicyOrDie(A100_40GB()).ToString(), " smem_optin=163KiB ")) << "A100";
}

TEST(PolicyTest, TheoreticalBandwidthFromClockAndBus) {
  EXPECT_NEAR(TeslaT4().TheoreticalBandwidth(), 320e9, 1e9);
  EXPECT_NEAR(NvidiaL4().TheoreticalBandwidth(), 300e9, 1e9);
  EXPECT_NEAR(A100_40GB().TheoreticalBandwidth(), 1555e9, 1e9);
  EXPECT_NEAR(H200().TheoreticalBandwidth(), 4917e9, 1e9);
  DeviceInfo unknown = H200();
  unknown.memory_clock_khz = 0;
  EXPECT_EQ(unknown.TheoreticalBandwidth(), 0.0);
}

TEST(PolicyTest, RefusesDevicesBelowTuring) {
  DeviceInfo v100 = A100_40GB();
  v100.name = "Tesla V100-SXM2-16GB";
  v100.cc_major = 7, v100.cc_minor = 0;
  auto p = ChoosePolicy(v100);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(p.status().message(), "Tesla V100-SXM2-16GB")) << p.status().message();
  EXPECT_TRUE(Contains(p.status().message(), "7.5")) << p.status().message();
}

TEST(PolicyTest, RefusesWithTheArithmeticWhenNoTileFits) {
  // A card with 16 KiB per block: the smallest W4A16 tile (64x64x32, one stage) needs
  // (2*64 + 2*64) * (32 + 8) * 2 = 20480 bytes (the dense GEMM's 15360 fit).
  DeviceInfo tiny = TeslaT4();
  tiny.name = "tiny";
  tiny.smem_per_block = 16 * kKiB;
  tiny.smem_per_block_optin = 16 * kKiB;
  auto p = ChoosePolicy(tiny);
  ASSERT_FALSE(p.ok());
  const std::string m = p.status().message();
  EXPECT_TRUE(Contains(m, "'tiny'")) << m;
  EXPECT_TRUE(Contains(m, "W4A16 GEMM tile needs required = 20480")) << m;
  EXPECT_TRUE(Contains(m, "available = 16384")) << m;

  // Enough for every W4A16 tile but not for head dim 512 with 8 keys a tile
  // (2*8*512*4 + 4*2*8*4 = 33024 bytes): the refusal names the head dim.
  DeviceInfo small = TeslaT4();
  small.smem_per_block = 32 * kKiB;
  small.smem_per_block_optin = 32 * kKiB;
  p = ChoosePolicy(small);
  ASSERT_FALSE(p.ok());
  EXPECT_TRUE(Contains(p.status().message(), "head_dim 512")) << p.status().message();
  EXPECT_TRUE(Contains(p.status().message(), "required = 33024")) << p.status().message();
  EXPECT_TRUE(Contains(p.status().message(), "available = 32768")) << p.status().message();
}

TEST(PolicyTest, NoOptInReportedFallsBackToTheDefault) {
  DeviceInfo d = TeslaT4();
  d.smem_per_block_optin = 0;
  const DevicePolicy p = PolicyOrDie(d);
  EXPECT_LE(p.w4a16_tile.smem_bytes, d.smem_per_block);
  EXPECT_FALSE(p.w4a16_tile.needs_optin);
  EXPECT_TRUE(Contains(p.ToString(), " smem_optin=48KiB ")) << p.ToString();
}

TEST(PolicyTest, FormatBytes) {
  EXPECT_EQ(FormatBytes(64 * kKiB), "64KiB");
  EXPECT_EQ(FormatBytes(43008), "42KiB");
  EXPECT_EQ(FormatBytes(1500), "1.5KiB");
  EXPECT_EQ(FormatBytes(512), "512B");
  EXPECT_EQ(FormatBytes(50 * testing::kMiB), "50MiB");
}

}  // namespace
}  // namespace g4::cuda
