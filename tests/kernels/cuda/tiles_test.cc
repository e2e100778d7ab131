// Tile and plan choice (kernels/cuda/tiles.h) for recorded T4, L4, A100 and H200 descriptions
// and a fake 16 KiB device: the choice per card, that every choice fits the card's opt-in shared
// memory, that bigger cards never get smaller tiles, the GEMM stage layout's bytes, and the
// refusal messages with their arithmetic. Host-only: runs without a GPU.
#include "kernels/cuda/tiles.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/cuda/recorded_devices.h"

namespace g4::cuda {
namespace {

using testing::A100_40GB;
using testing::H200;
using testing::kKiB;
using testing::NvidiaL4;
using testing::TeslaT4;

// Smallest to largest shared memory.
std::vector<DeviceInfo> Cards() { return {TeslaT4(), NvidiaL4(), A100_40GB(), H200()}; }

W4A16Tile TileOrDie(const DeviceInfo& d, int64_t K = 1536, int64_t group = 32) {
  auto t = ChooseW4A16Tile(d.smem_per_block_optin, d.smem_per_block, d.cc(), K, group);
  EXPECT_TRUE(t.ok()) << d.name << ": " << t.status().ToString();
  return t.ok() ? *t : W4A16Tile{};
}

AttentionPlan PlanOrDie(const DeviceInfo& d, int64_t head_dim) {
  auto p = ChooseAttentionPlan(head_dim, d.smem_per_block_optin, d.smem_per_block);
  EXPECT_TRUE(p.ok()) << d.name << ": " << p.status().ToString();
  return p.ok() ? *p : AttentionPlan{};
}

std::string Shape(const W4A16Tile& t) {
  return std::to_string(t.bm) + "x" + std::to_string(t.bn) + "x" + std::to_string(t.bk) + "x" +
         std::to_string(t.stages);
}

TEST(TilesTest, GemmStageBytesAreTheSplitActivationsAndWeightParts) {
  // 64x64x32: x hi and lo, 64 rows each, and w (1 part dense, 2 int4), rows of 32 + 8 halves.
  EXPECT_EQ(GemmStageBytes(64, 64, 32, 1), (2 * 64 + 64) * 40 * 2);
  EXPECT_EQ(GemmStageBytes(64, 64, 32, 2), (2 * 64 + 2 * 64) * 40 * 2);
  EXPECT_EQ(GemmTileSmemBytes(128, 128, 32, 3, 2), 3 * GemmStageBytes(128, 128, 32, 2));
}

TEST(TilesTest, DenseGemmChoicePerRecordedCard) {
  for (const DeviceInfo& d : Cards()) {
    auto t = ChooseGemmTile(d.smem_per_block_optin, d.smem_per_block, d.cc(), 1);
    ASSERT_TRUE(t.ok()) << d.name;
    EXPECT_EQ(t->bm, 128) << d.name;  // 128x128 fits every recorded card
    EXPECT_EQ(t->stages, d.cc() < 80 ? 2 : 3) << d.name;
    EXPECT_EQ(t->smem_bytes, GemmTileSmemBytes(128, 128, 32, t->stages, 1));
    EXPECT_LE(t->smem_bytes, d.smem_per_block_optin);
  }
  // The smallest dense tile (15360 B) fits 16 KiB; the smallest W4A16 one does not.
  EXPECT_TRUE(ChooseGemmTile(16 * kKiB, 16 * kKiB, 80, 1).ok());
}

TEST(TilesTest, W4A16ChoicePerRecordedCard) {
  EXPECT_EQ(Shape(TileOrDie(TeslaT4())), "64x128x32x2");   // 81920 > 64 KiB for 128x128
  EXPECT_EQ(Shape(TileOrDie(NvidiaL4())), "128x128x32x2");  // 3 stages: 122880 > 99 KiB
  EXPECT_EQ(Shape(TileOrDie(A100_40GB())), "128x128x32x3");
  EXPECT_EQ(Shape(TileOrDie(H200())), "128x128x32x3");
  EXPECT_TRUE(TileOrDie(TeslaT4()).needs_optin);  // 61440 > the 48 KiB default
  EXPECT_TRUE(TileOrDie(NvidiaL4()).needs_optin);
}

TEST(TilesTest, EveryChoiceFitsAndBiggerCardsNeverGetSmallerTiles) {
  for (int64_t group : {32, 64, 128, 1536}) {
    W4A16Tile prev;
    AttentionPlan prev256, prev512;
    for (const DeviceInfo& d : Cards()) {
      SCOPED_TRACE(d.name + " group " + std::to_string(group));
      const W4A16Tile t = TileOrDie(d, 1536, group);
      EXPECT_EQ(t.smem_bytes, GemmTileSmemBytes(t.bm, t.bn, t.bk, t.stages, 2));
      EXPECT_LE(t.smem_bytes, d.smem_per_block_optin);
      EXPECT_EQ(t.needs_optin, t.smem_bytes > d.smem_per_block);
      EXPECT_GE(t.bm * t.bn, prev.bm * prev.bn);
      EXPECT_GE(t.smem_bytes, prev.smem_bytes);
      if (d.cc() < 80) {
        EXPECT_LE(t.stages, 2);
      }
      prev = t;
      for (int64_t hd : {256, 512}) {
        const AttentionPlan p = PlanOrDie(d, hd);
        AttentionPlan& before = hd == 256 ? prev256 : prev512;
        EXPECT_EQ(p.head_dim, hd);
        EXPECT_EQ(p.smem_bytes, AttentionSmemBytes(hd, p.bc, p.warps, p.rows_per_warp));
        EXPECT_LE(p.smem_bytes, d.smem_per_block_optin);
        EXPECT_EQ(p.needs_optin, p.smem_bytes > d.smem_per_block);
        EXPECT_GE(p.bc, before.bc);
        before = p;
      }
    }
  }
}

TEST(TilesTest, AttentionChoicePerRecordedCard) {
  // K and V tiles of bc rows x head_dim f32 plus the score rows; Turing stays within 64 KiB.
  EXPECT_EQ(PlanOrDie(TeslaT4(), 256).bc, 16);
  EXPECT_EQ(PlanOrDie(TeslaT4(), 512).bc, 8);
  EXPECT_LE(PlanOrDie(TeslaT4(), 256).smem_bytes, 64 * kKiB);
  EXPECT_LE(PlanOrDie(TeslaT4(), 512).smem_bytes, 64 * kKiB);
  EXPECT_EQ(PlanOrDie(NvidiaL4(), 256).bc, 32);
  EXPECT_EQ(PlanOrDie(NvidiaL4(), 512).bc, 16);
  EXPECT_EQ(PlanOrDie(A100_40GB(), 256).bc, 64);
  EXPECT_EQ(PlanOrDie(A100_40GB(), 512).bc, 32);
  EXPECT_EQ(PlanOrDie(H200(), 256).bc, 64);
  EXPECT_EQ(PlanOrDie(H200(), 512).bc, 32);
  // Register budget: 4 rows per warp up to head_dim 256, 2 above.
  EXPECT_EQ(PlanOrDie(H200(), 256).rows_per_warp, 4);
  EXPECT_EQ(PlanOrDie(H200(), 512).rows_per_warp, 2);
  EXPECT_EQ(PlanOrDie(H200(), 96).rows_per_warp, 4);
}

TEST(TilesTest, A16KiBDeviceIsRefusedWithTheArithmetic) {
  const int64_t small = 16 * kKiB;
  auto t = ChooseW4A16Tile(small, small, 80, 1536, 32);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  const int64_t need = GemmTileSmemBytes(64, 64, 32, 1, 2);
  EXPECT_EQ(need, 20480);
  EXPECT_EQ(t.status().message(),
            "W4A16 GEMM tile needs required = 20480 bytes of shared memory per block, "
            "available = 16384 (device opt-in limit)");

  auto a = ChooseAttentionPlan(512, small, small);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().message(),
            "attention tile needs required = " + std::to_string(AttentionSmemBytes(512, 8, 4, 2)) +
                " bytes of shared memory per block, available = 16384 (device opt-in limit)");
  // head_dim 256 with bc = 8 is 16384 + 512 bytes: also refused, by 512 bytes.
  EXPECT_FALSE(ChooseAttentionPlan(256, small, small).ok());
}

TEST(TilesTest, BadShapesAreInvalidArguments) {
  EXPECT_EQ(ChooseW4A16Tile(1 << 20, 1 << 16, 90, 100, 32).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ChooseW4A16Tile(1 << 20, 1 << 16, 90, 64, 0).status().code(),
            StatusCode::kInvalidArgument);
  for (int64_t hd : {0, -32, 100, 544}) {
    EXPECT_EQ(ChooseAttentionPlan(hd, 1 << 20, 1 << 16).status().code(),
              StatusCode::kInvalidArgument)
        << hd;
  }
}

TEST(TilesTest, KeySplitsFillTheDeviceOnlyWhenQueryTilesAreFew) {
  EXPECT_EQ(AttentionKeySplits(1000, 4096, 32, 132), 1);  // prefill: query tiles suffice
  EXPECT_EQ(AttentionKeySplits(2, 16, 32, 132), 1);       // one key tile: nothing to split
  for (int64_t S : {33, 100, 4096, 100000}) {
    for (int64_t qb : {1, 2, 8, 50}) {
      const int s = AttentionKeySplits(qb, S, 32, 132);
      EXPECT_GE(s, 1);
      EXPECT_LE(s, 64);
      EXPECT_LE(s, (S + 31) / 32);
      if (qb * 64 <= 2 * 132 && S >= 64 * 32) {
        EXPECT_EQ(s, 64) << qb << " " << S;
      }
    }
  }
}

}  // namespace
}  // namespace g4::cuda
