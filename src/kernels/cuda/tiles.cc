#include "kernels/cuda/tiles.h"

#include <algorithm>
#include <string>

namespace g4::cuda {
namespace {

Status NoTileFits(const char* what, int64_t required, int64_t available) {
  return InvalidArgument(std::string(what) + " tile needs required = " + std::to_string(required) +
                         " bytes of shared memory per block, available = " +
                         std::to_string(available) + " (device opt-in limit)");
}

constexpr int kAttentionBc[] = {64, 32, 16, 8};

}  // namespace

int64_t GemmStageBytes(int64_t bm, int64_t bn, int64_t bk, int64_t w_parts) {
  return (2 * bm + w_parts * bn) * (bk + kGemmPad) * 2;
}

int64_t GemmTileSmemBytes(int64_t bm, int64_t bn, int64_t bk, int64_t stages, int64_t w_parts) {
  return stages * GemmStageBytes(bm, bn, bk, w_parts);
}

StatusOr<GemmTile> ChooseGemmTile(int64_t smem_optin_bytes, int64_t smem_default_bytes, int cc,
                                  int64_t w_parts, const char* what) {
  const int max_stages = cc < 80 ? 2 : 3;
  int64_t smallest = 0;
  for (const GemmShape& c : kGemmCandidates) {
    if (c.stages > max_stages) continue;
    const int64_t bytes = GemmTileSmemBytes(c.bm, c.bn, c.bk, c.stages, w_parts);
    smallest = bytes;
    if (bytes <= smem_optin_bytes) {
      GemmTile t;
      t.bm = c.bm;
      t.bn = c.bn;
      t.bk = c.bk;
      t.stages = c.stages;
      t.smem_bytes = bytes;
      t.needs_optin = bytes > smem_default_bytes;
      return t;
    }
  }
  return NoTileFits(what, smallest, smem_optin_bytes);
}

StatusOr<W4A16Tile> ChooseW4A16Tile(int64_t smem_optin_bytes, int64_t smem_default_bytes, int cc,
                                    int64_t K, int64_t group) {
  if (K <= 0 || group <= 0 || K % group != 0) {
    return InvalidArgument("W4A16 GEMM: K = " + std::to_string(K) + " must be a positive " +
                           "multiple of the group size " + std::to_string(group));
  }
  return ChooseGemmTile(smem_optin_bytes, smem_default_bytes, cc, 2, "W4A16 GEMM");
}

int64_t AttentionSmemBytes(int64_t head_dim, int64_t bc, int64_t warps, int64_t rows_per_warp) {
  return 2 * bc * head_dim * 4 + warps * rows_per_warp * bc * 4;
}

StatusOr<AttentionPlan> ChooseAttentionPlan(int64_t head_dim, int64_t smem_optin_bytes,
                                            int64_t smem_default_bytes) {
  if (head_dim <= 0 || head_dim % 32 != 0 || head_dim > kAttentionMaxHeadDim) {
    return InvalidArgument("attention: head_dim = " + std::to_string(head_dim) +
                           " must be a positive multiple of 32 up to " +
                           std::to_string(kAttentionMaxHeadDim));
  }
  const int rows = head_dim <= 256 ? 4 : 2;
  int64_t smallest = 0;
  for (int bc : kAttentionBc) {
    const int64_t bytes = AttentionSmemBytes(head_dim, bc, kAttentionWarps, rows);
    smallest = bytes;
    if (bytes <= smem_optin_bytes) {
      AttentionPlan p;
      p.head_dim = static_cast<int>(head_dim);
      p.bc = bc;
      p.warps = kAttentionWarps;
      p.rows_per_warp = rows;
      p.smem_bytes = bytes;
      p.needs_optin = bytes > smem_default_bytes;
      return p;
    }
  }
  return NoTileFits("attention", smallest, smem_optin_bytes);
}

int AttentionKeySplits(int64_t query_blocks, int64_t S, int bc, int sm_count) {
  const int64_t want_blocks = 2 * static_cast<int64_t>(std::max(sm_count, 1));
  if (query_blocks >= want_blocks || S <= bc) return 1;
  const int64_t by_device = (want_blocks + query_blocks - 1) / query_blocks;
  const int64_t by_keys = (S + bc - 1) / bc;  // every split gets at least one key tile
  return static_cast<int>(std::clamp<int64_t>(std::min(by_device, by_keys), 1, 64));
}

}  // namespace g4::cuda
