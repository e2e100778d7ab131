// Tile and plan choice for the heavy CUDA kernels (W4A16 GEMM, attention): pure host C++ with no
// CUDA headers, so the choice is unit-tested on machines without a GPU (tests/kernels/cuda/
// tiles_test.cc) and the kernels (matmul_quant.cu, attention.cu) size their shared memory with
// exactly these formulas. A device whose shared memory cannot hold the smallest tile gets a
// Status with the arithmetic, never a failed launch.
#pragma once

#include <cstdint>

#include "core/status.h"

namespace g4::cuda {

// What the tile choice needs to know about a device (filled from cudaGetDeviceProperties).
struct DeviceLimits {
  int cc = 0;                  // compute capability as 10 * major + minor: 75, 80, 89, 90
  int sm_count = 0;            // streaming multiprocessors (attention's key-split count)
  int64_t smem_default = 0;    // sharedMemPerBlock: dynamic smem without opting in (48 KiB)
  int64_t smem_optin = 0;      // sharedMemPerBlockOptin: the most one block may opt in to
};

// ---- W4A16 GEMM (prefill): y[T, N] = x[T, K] @ dequant(w[N, K])^T ----
// A block computes a BM x BN output tile (BM rows of x, BN rows of w) with 256 threads, walking K
// in steps of BK through a ring of `stages` shared-memory buffers. One stage holds, in order:
//   x tile      [BM, BK] f32                       BM * BK * 4 bytes
//   scales      [BN, slots] f32 (widened on load)  BN * slots * 4 bytes
//   packed w    [BN, BK / 2] int4 nibbles          BN * BK / 2 bytes
// where slots = W4A16ScaleSlots(BK, group), the most quantization groups one BK step can touch.
inline constexpr int kW4A16Threads = 256;

struct W4A16Tile {
  int bm = 0, bn = 0, bk = 0, stages = 0;
  int64_t smem_bytes = 0;  // W4A16TileSmemBytes(bm, bn, bk, stages, group)
  bool needs_optin = false;  // smem_bytes > the device's default: cudaFuncSetAttribute first
};

// Groups a K step [k0, k0 + bk) with k0 % bk == 0 can touch: bk / group when groups align to the
// step, 1 when a group spans whole steps, ceil(bk / group) + 1 otherwise.
int64_t W4A16ScaleSlots(int64_t bk, int64_t group);
int64_t W4A16StageBytes(int64_t bm, int64_t bn, int64_t bk, int64_t group);
int64_t W4A16TileSmemBytes(int64_t bm, int64_t bn, int64_t bk, int64_t stages, int64_t group);

// The largest tile of a fixed candidate list (128x128x64 with 3 stages down to 64x64x64 with
// one) whose shared memory fits `smem_optin_bytes`. Devices below SM 8.0 (no cp.async, so a
// deeper ring only costs memory) get at most 2 stages. InvalidArgument for K or group that are
// not positive or K % group != 0; when nothing fits, InvalidArgument with the arithmetic:
// "W4A16 GEMM tile needs required = N bytes of shared memory per block, available = M (device
// opt-in limit)".
StatusOr<W4A16Tile> ChooseW4A16Tile(int64_t smem_optin_bytes, int64_t smem_default_bytes, int cc,
                                    int64_t K, int64_t group);

// ---- Attention ----
// A block owns one KV head and a tile of `warps * rows_per_warp` query rows (a row is one
// (query position, query head) pair of that KV head's GQA group); each warp keeps its rows' q
// and output accumulators in registers (head_dim / 32 floats per lane per row). The block walks
// its keys in tiles of `bc` rows. Shared memory:
//   K tile  [bc, head_dim] f32, V tile [bc, head_dim] f32, scores [warps * rows_per_warp, bc] f32.
inline constexpr int kAttentionWarps = 4;
inline constexpr int kAttentionMaxHeadDim = 512;

struct AttentionPlan {
  int head_dim = 0;
  int bc = 0;             // keys per shared-memory tile
  int warps = 0;          // warps per block (kAttentionWarps)
  int rows_per_warp = 0;  // query rows per warp: 4 up to head_dim 256, 2 above (registers)
  int64_t smem_bytes = 0; // AttentionSmemBytes(head_dim, bc, warps, rows_per_warp)
  bool needs_optin = false;
  int rows_per_block() const { return warps * rows_per_warp; }
};

int64_t AttentionSmemBytes(int64_t head_dim, int64_t bc, int64_t warps, int64_t rows_per_warp);

// The largest key tile bc in {64, 32, 16, 8} whose shared memory fits `smem_optin_bytes`.
// InvalidArgument for a head_dim that is not a positive multiple of 32 up to 512, or (with the
// arithmetic, as for ChooseW4A16Tile) when even bc = 8 does not fit.
StatusOr<AttentionPlan> ChooseAttentionPlan(int64_t head_dim, int64_t smem_optin_bytes,
                                            int64_t smem_default_bytes);

// Key splits for flash-decoding: enough blocks to fill the device (2 per SM) when the query
// tiles alone are too few, each split at least one key tile, at most 64 splits. 1 means no split
// (prefill: the query tiles fill the device).
int AttentionKeySplits(int64_t query_blocks, int64_t S, int bc, int sm_count);

}  // namespace g4::cuda
