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

// ---- Tensor-core GEMM (prefill): y[T, N] = x[T, K] @ w[N, K]^T (gemm.cuh) ----
// A block computes a BM x BN output tile (BM rows of x, BN rows of w) with 8 warps (2 x 4, each
// (BM / 2) x (BN / 4) in 16 x 16 WMMA tiles), walking K in steps of BK through a ring of
// `stages` shared-memory buffers. The compute type is 16-bit (bf16 or f16). x is stored as two
// parts, hi = x rounded to the compute type and lo = the rest rounded, so hi + lo carries about
// 16 bits more than hi and the GEMM is close to f32 (the decode GEMV's precision); dense
// weights are exact in the compute type (one part), dequantized int4 weights (q * scale) are
// split the same way (two parts). One stage holds rows of BK + kGemmPad 16-bit elements (the pad
// staggers shared-memory banks and keeps rows 16-byte aligned, so the loaders store 8 elements
// at a time):
//   x hi, x lo   2 x [BM, BK + kGemmPad]
//   w parts      w_parts x [BN, BK + kGemmPad]
inline constexpr int kGemmThreads = 256;
inline constexpr int kGemmPad = 8;

struct GemmTile {
  int bm = 0, bn = 0, bk = 0, stages = 0;
  int64_t smem_bytes = 0;  // GemmTileSmemBytes(bm, bn, bk, stages, w_parts)
  bool needs_optin = false;  // smem_bytes > the device's default: cudaFuncSetAttribute first
};
using W4A16Tile = GemmTile;

int64_t GemmStageBytes(int64_t bm, int64_t bn, int64_t bk, int64_t w_parts);
int64_t GemmTileSmemBytes(int64_t bm, int64_t bn, int64_t bk, int64_t stages, int64_t w_parts);

// The tile shapes the kernels are instantiated for, largest first (bigger output tiles reuse
// each loaded x / w element more often): 128x128, 64x128, 64x64, all with BK = 32.
struct GemmShape {
  int bm, bn, bk, stages;
};
inline constexpr GemmShape kGemmCandidates[] = {
    {128, 128, 32, 3}, {128, 128, 32, 2}, {64, 128, 32, 2}, {64, 64, 32, 2}, {64, 64, 32, 1},
};

// The first candidate whose shared memory fits `smem_optin_bytes`. Devices below SM 8.0 (no
// cp.async, so a deeper ring only costs memory) get at most 2 stages. When nothing fits,
// InvalidArgument with the arithmetic: "<what> tile needs required = N bytes of shared memory
// per block, available = M (device opt-in limit)".
StatusOr<GemmTile> ChooseGemmTile(int64_t smem_optin_bytes, int64_t smem_default_bytes, int cc,
                                  int64_t w_parts, const char* what = "GEMM");

// The W4A16 GEMM's tile (two weight parts). InvalidArgument for K or group that are not positive
// or K % group != 0, or (what = "W4A16 GEMM") when nothing fits.
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
