// The tensor-core GEMM for prefill rows (tiles.h: layout and tile choice): y[T, N] = x[T, K] @
// w[N, K]^T through WMMA 16 x 16 x 16 tiles in a 16-bit compute type CT (__nv_bfloat16 on SM >=
// 8.0, __half), accumulated in f32. x is split into hi + lo parts of CT, so the products carry x
// to about 16 bits more than CT; the weight tile comes from a loader (`WTile`): dense 16-bit
// weights are copied as stored (one part, exact), int4 weights dequantized in f32 and split like
// x (two parts). Every tile edge is bounds-checked: rows past T or N and elements past K are 0.
// The __global__ wrappers live in the .cu files that instantiate this (matmul.cu,
// matmul_quant.cu): each declares the dynamic shared memory and calls TcGemmBlock.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "core/status.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/load.cuh"
#include "kernels/cuda/tiles.h"

namespace g4::cuda {

// The bits of f rounded to nearest even in CT. bf16 by integer arithmetic (NaN stays NaN), so no
// bf16 conversion instruction is needed.
template <typename CT>
__device__ __forceinline__ uint16_t ToBits(float f) {
  if constexpr (std::is_same_v<CT, __nv_bfloat16>) {
    uint32_t u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return static_cast<uint16_t>(u >> 16);
  } else {
    return __half_as_ushort(__float2half_rn(f));
  }
}

template <typename CT>
__device__ __forceinline__ float FromBits(uint16_t b) {
  if constexpr (std::is_same_v<CT, __nv_bfloat16>) {
    return Bf16BitsToF32(b);
  } else {
    return F16BitsToF32(b);
  }
}

// f as hi + lo in CT: hi = f rounded, lo = (f - hi) rounded (f - hi is exact in f32).
template <typename CT>
__device__ __forceinline__ void SplitHiLo(float f, uint16_t* hi, uint16_t* lo) {
  const uint16_t h = ToBits<CT>(f);
  *hi = h;
  *lo = ToBits<CT>(f - FromBits<CT>(h));
}

// Eight values of f as hi and lo parts in CT, stored as one 16-byte word each at hi and lo
// (16-byte aligned shared memory).
template <typename CT>
__device__ __forceinline__ void SplitHiLo8(const float (&f)[8], uint16_t* hi, uint16_t* lo) {
  uint32_t h[4] = {}, l[4] = {};
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    uint16_t a, b;
    SplitHiLo<CT>(f[e], &a, &b);
    h[e / 2] |= static_cast<uint32_t>(a) << (16 * (e % 2));
    l[e / 2] |= static_cast<uint32_t>(b) << (16 * (e % 2));
  }
  *reinterpret_cast<uint4*>(hi) = uint4{h[0], h[1], h[2], h[3]};
  *reinterpret_cast<uint4*>(lo) = uint4{l[0], l[1], l[2], l[3]};
}

// Whether every 8-element run from a multiple of 8 in the rows of a [rows, K] matrix of 16-bit
// or f32 elements at p starts 16-byte aligned (and lies in its row): p is, and K % 8 == 0.
__device__ __forceinline__ bool Runs8(const void* p, int64_t K) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0 && K % 8 == 0;
}

// Weight loaders: fill a stage's weight parts, rows [n0, n0 + BN) by k [k0, k0 + BK), at row
// stride BK + kGemmPad (so every 8-element run from a multiple of 8 is a 16-byte-aligned word:
// tiles.h), with all kGemmThreads threads.
// Dense weights already in CT (bf16 weights for bf16, f16 for f16): copied as stored, 16 bytes
// per load where the rows allow (Runs8), else one element at a time.
struct DenseWTile {
  static constexpr int kParts = 1;
  const uint16_t* w;  // [N, K]
  template <typename CT, int BN, int BK>
  __device__ __forceinline__ void Load(int64_t n0, int64_t k0, int64_t N, int64_t K,
                                       uint16_t* part0, uint16_t* /*part1*/) const {
    constexpr int LD = BK + kGemmPad, R = BK / 8;
    if (Runs8(w, K)) {
      for (int idx = threadIdx.x; idx < BN * R; idx += kGemmThreads) {
        const int c = idx / R, kk = 8 * (idx % R);
        const int64_t n = n0 + c, k = k0 + kk;
        *reinterpret_cast<uint4*>(part0 + c * LD + kk) =
            (n < N && k < K) ? *reinterpret_cast<const uint4*>(w + n * K + k) : uint4{0, 0, 0, 0};
      }
      return;
    }
    for (int idx = threadIdx.x; idx < BN * BK; idx += kGemmThreads) {
      const int c = idx / BK, kk = idx % BK;
      const int64_t n = n0 + c, k = k0 + kk;
      part0[c * LD + kk] = (n < N && k < K) ? w[n * K + k] : uint16_t{0};
    }
  }
};

// compressed-tensors int4 (core/tensor.h: row n at w + n * row_bytes, low nibble = even k,
// stored nibble = q + 8, scales [N, K / group]): q * scale in f32, split into hi and lo. Where
// every 8-nibble run from a multiple of 8 is an aligned 4-byte word inside one group (w and
// row_bytes 4-byte aligned, K and the group multiples of 8), a thread loads such a word and one
// scale; else a byte (two nibbles) at a time.
struct Int4WTile {
  static constexpr int kParts = 2;
  const uint8_t* w;
  int64_t row_bytes;
  const void* scales;
  ElemType scale_type;
  int64_t group;
  template <typename CT, int BN, int BK>
  __device__ __forceinline__ void Load(int64_t n0, int64_t k0, int64_t N, int64_t K,
                                       uint16_t* part0, uint16_t* part1) const {
    constexpr int LD = BK + kGemmPad, HB = BK / 2, R = BK / 8;  // k0 is even: BK is
    const int64_t groups = K / group;
    if (reinterpret_cast<uintptr_t>(w) % 4 == 0 && row_bytes % 4 == 0 && K % 8 == 0 &&
        group % 8 == 0) {
      for (int idx = threadIdx.x; idx < BN * R; idx += kGemmThreads) {
        const int c = idx / R, kk = 8 * (idx % R);
        const int64_t n = n0 + c, k = k0 + kk;
        float v[8] = {};
        if (n < N && k < K) {  // then k + 7 < K
          const uint32_t word = *reinterpret_cast<const uint32_t*>(w + n * row_bytes + k / 2);
          const float sc = LoadF32(scale_type, scales, n * groups + k / group);
#pragma unroll
          for (int e = 0; e < 8; ++e) {
            v[e] = static_cast<float>(static_cast<int>((word >> (4 * e)) & 0xfu) - 8) * sc;
          }
        }
        SplitHiLo8<CT>(v, part0 + c * LD + kk, part1 + c * LD + kk);
      }
      return;
    }
    for (int idx = threadIdx.x; idx < BN * HB; idx += kGemmThreads) {
      const int c = idx / HB, b2 = idx % HB;
      const int64_t n = n0 + c, k = k0 + 2 * b2;
      const uint32_t byte = (n < N && k < K) ? w[n * row_bytes + k / 2] : 0x88u;
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float v = 0.0f;
        if (n < N && k + e < K) {
          const int q = static_cast<int>((byte >> (4 * e)) & 0xfu) - 8;
          v = static_cast<float>(q) * LoadF32(scale_type, scales, n * groups + (k + e) / group);
        }
        SplitHiLo<CT>(v, &part0[c * LD + 2 * b2 + e], &part1[c * LD + 2 * b2 + e]);
      }
    }
  }
};

// One block's BM x BN tile of y. `smem`: the dynamic shared memory, GemmTileSmemBytes(BM, BN,
// BK, stages, WTile::kParts) bytes, 32-byte aligned (WMMA's rule; the kernels have no static
// shared memory, so it starts at the block's shared window). Warp (wm, wn) of the 2 x 4 owns
// rows wm * BM / 2 and columns wn * BN / 4 of the tile. The K steps rotate through `stages`
// buffers: step kt + stages - 1 is loaded before step kt is computed (plain loads: the ring
// overlaps loads and tensor-core work across warps).
template <typename CT, typename WTile, int BM, int BN, int BK>
__device__ __forceinline__ void TcGemmTile(unsigned char* smem, const WTile& wt,
                                            const float* __restrict__ x, int64_t T, int64_t N,
                                            int64_t K, float* __restrict__ y, int stages) {
  namespace wmma = nvcuda::wmma;
  static_assert(BM % 32 == 0 && BN % 64 == 0 && BK % 16 == 0, "2 x 4 warps of 16 x 16 tiles");
  constexpr int LD = BK + kGemmPad, WM = BM / 2, WN = BN / 4, MI = WM / 16, NJ = WN / 16;
  static_assert(LD % 8 == 0, "8-element runs from a multiple of 8 are 16-byte words");
  constexpr int kParts = WTile::kParts;
  constexpr int kStageElems = (2 * BM + kParts * BN) * LD;
  uint16_t* const base = reinterpret_cast<uint16_t*>(smem);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wm = warp / 4, wn = warp % 4;
  const int64_t m0 = static_cast<int64_t>(blockIdx.y) * BM;
  const int64_t n0 = static_cast<int64_t>(blockIdx.x) * BN;
  const int64_t ksteps = (K + BK - 1) / BK;

  const bool x_runs = Runs8(x, K);
  auto load = [&](int64_t kt) {
    uint16_t* const st = base + (kt % stages) * kStageElems;
    const int64_t k0 = kt * BK;
    if (x_runs) {  // two 16-byte loads of x and a 16-byte store of each part per thread
      constexpr int R = BK / 8;
      for (int idx = threadIdx.x; idx < BM * R; idx += kGemmThreads) {
        const int r = idx / R, kk = 8 * (idx % R);
        const int64_t t = m0 + r, k = k0 + kk;
        float v[8] = {};
        if (t < T && k < K) {  // then k + 7 < K
          const float4* const p = reinterpret_cast<const float4*>(x + t * K + k);
          const float4 a = p[0], b = p[1];
          v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w;
          v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
        }
        SplitHiLo8<CT>(v, st + r * LD + kk, st + (BM + r) * LD + kk);
      }
    } else {
      for (int idx = threadIdx.x; idx < BM * BK; idx += kGemmThreads) {
        const int r = idx / BK, kk = idx % BK;
        const int64_t t = m0 + r, k = k0 + kk;
        SplitHiLo<CT>((t < T && k < K) ? x[t * K + k] : 0.0f, &st[r * LD + kk],
                      &st[(BM + r) * LD + kk]);
      }
    }
    wt.template Load<CT, BN, BK>(n0, k0, N, K, st + 2 * BM * LD,
                                 st + (2 * BM + (kParts - 1) * BN) * LD);
  };

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[MI][NJ];
#pragma unroll
  for (int i = 0; i < MI; ++i) {
#pragma unroll
    for (int j = 0; j < NJ; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
  }
  for (int64_t kt = 0; kt < stages - 1 && kt < ksteps; ++kt) load(kt);
  for (int64_t kt = 0; kt < ksteps; ++kt) {
    if (kt + stages - 1 < ksteps) load(kt + stages - 1);  // into the buffer freed at kt - 1
    __syncthreads();
    const CT* const st = reinterpret_cast<const CT*>(base + (kt % stages) * kStageElems);
    const CT* const xhi = st + WM * wm * LD;
    const CT* const xlo = st + (BM + WM * wm) * LD;
    const CT* const wp = st + (2 * BM + WN * wn) * LD;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, CT, wmma::row_major> ahi[MI], alo[MI];
#pragma unroll
      for (int i = 0; i < MI; ++i) {
        wmma::load_matrix_sync(ahi[i], xhi + 16 * i * LD + kk, LD);
        wmma::load_matrix_sync(alo[i], xlo + 16 * i * LD + kk, LD);
      }
#pragma unroll
      for (int j = 0; j < NJ; ++j) {
        // w[n, k] stored n-major is w^T column-major: the B operand.
        wmma::fragment<wmma::matrix_b, 16, 16, 16, CT, wmma::col_major> b;
        wmma::load_matrix_sync(b, wp + 16 * j * LD + kk, LD);
#pragma unroll
        for (int i = 0; i < MI; ++i) {
          wmma::mma_sync(acc[i][j], alo[i], b, acc[i][j]);
          wmma::mma_sync(acc[i][j], ahi[i], b, acc[i][j]);
        }
        if constexpr (kParts == 2) {  // + x_hi w_lo (x_lo w_lo is below f32's last bits)
          wmma::load_matrix_sync(b, wp + (BN + 16 * j) * LD + kk, LD);
#pragma unroll
          for (int i = 0; i < MI; ++i) wmma::mma_sync(acc[i][j], ahi[i], b, acc[i][j]);
        }
      }
    }
    __syncthreads();  // the buffer is reloaded at step kt + 1
  }
  // The ring is free: each warp stages one 16 x 16 result at a time in its own 1 KiB, then
  // writes the rows and columns inside y.
  float* const out = reinterpret_cast<float*>(smem) + warp * 256;
#pragma unroll
  for (int i = 0; i < MI; ++i) {
#pragma unroll
    for (int j = 0; j < NJ; ++j) {
      wmma::store_matrix_sync(out, acc[i][j], 16, wmma::mem_row_major);
      __syncwarp();
      for (int e = lane; e < 256; e += 32) {
        const int64_t t = m0 + WM * wm + 16 * i + e / 16, n = n0 + WN * wn + 16 * j + e % 16;
        if (t < T && n < N) y[t * N + n] = out[e];
      }
      __syncwarp();
    }
  }
}

// TcGemmTile, but a trap where the device compile has no bf16 WMMA (SM 7.5: the host launches
// bf16 kernels only where TcGemmSupported).
template <typename CT, typename WTile, int BM, int BN, int BK>
__device__ __forceinline__ void TcGemmBlock(unsigned char* smem, const WTile& wt,
                                            const float* __restrict__ x, int64_t T, int64_t N,
                                            int64_t K, float* __restrict__ y, int stages) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  if constexpr (std::is_same_v<CT, __nv_bfloat16>) {
    __trap();
  } else {
    TcGemmTile<CT, WTile, BM, BN, BK>(smem, wt, x, T, N, K, y, stages);
  }
#else
  TcGemmTile<CT, WTile, BM, BN, BK>(smem, wt, x, T, N, K, y, stages);
#endif
}

// True when the kernels of CT run on a device of compute capability cc (bf16 WMMA: SM 8.0).
inline bool TcGemmSupported(bool bf16, int cc) { return cc >= (bf16 ? 80 : 75); }

// Launches kernel (a __global__ wrapper of TcGemmBlock<CT, WTile, BM, BN, BK>) over y's tiles,
// opting in to the tile's shared memory first where it exceeds the default.
template <int BM, int BN, typename Kernel, typename WTile>
Status LaunchTcGemm(Kernel kernel, const WTile& wt, const float* x, int64_t T, int64_t N,
                    int64_t K, float* y, const GemmTile& tile, cudaStream_t s, const char* who) {
  if ((T + BM - 1) / BM > 65535) {
    return InvalidArgument(std::string(who) + ": T = " + std::to_string(T) +
                           " exceeds the GEMM grid");
  }
  if (tile.smem_bytes > 48 * 1024 || tile.needs_optin) {
    const cudaError_t e = cudaFuncSetAttribute(
        kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(tile.smem_bytes));
    if (e != cudaSuccess) {
      return Internal(std::string(who) + ": cannot opt in to " +
                      std::to_string(tile.smem_bytes) + " bytes of shared memory: " +
                      cudaGetErrorString(e));
    }
  }
  const dim3 grid(static_cast<unsigned>((N + BN - 1) / BN),
                  static_cast<unsigned>((T + BM - 1) / BM));
  LaunchKernel(kernel, grid, kGemmThreads, static_cast<size_t>(tile.smem_bytes), s, wt, x, T, N,
               K, y, tile.stages);
  return LaunchStatus(who);
}

// The tile's shape must be a kGemmCandidates one and its bytes the layout's.
inline Status CheckGemmTile(const GemmTile& tile, int64_t w_parts, const char* who) {
  bool known = false;
  for (const GemmShape& c : kGemmCandidates) {
    known = known || (c.bm == tile.bm && c.bn == tile.bn && c.bk == tile.bk);
  }
  if (!known || tile.stages < 1 ||
      tile.smem_bytes != GemmTileSmemBytes(tile.bm, tile.bn, tile.bk, tile.stages, w_parts)) {
    return InvalidArgument(std::string(who) + ": tile " + std::to_string(tile.bm) + "x" +
                           std::to_string(tile.bn) + "x" + std::to_string(tile.bk) + "x" +
                           std::to_string(tile.stages) + " of " +
                           std::to_string(tile.smem_bytes) + " bytes is not a GEMM tile layout");
  }
  return Status::Ok();
}

// Runs Kernels<CT, BM, BN, BK>::Get() (the .cu's __global__ wrapper of TcGemmBlock) for the
// tile's shape.
template <template <typename, int, int, int> class Kernels, typename CT, typename WTile>
Status RunTcGemm(const WTile& wt, const float* x, int64_t T, int64_t N, int64_t K, float* y,
                 const GemmTile& tile, cudaStream_t s, const char* who) {
  G4_RETURN_IF_ERROR(CheckGemmTile(tile, WTile::kParts, who));
  if (tile.bm == 128 && tile.bn == 128) {
    return LaunchTcGemm<128, 128>(Kernels<CT, 128, 128, 32>::Get(), wt, x, T, N, K, y, tile, s,
                                  who);
  }
  if (tile.bm == 64 && tile.bn == 128) {
    return LaunchTcGemm<64, 128>(Kernels<CT, 64, 128, 32>::Get(), wt, x, T, N, K, y, tile, s,
                                 who);
  }
  return LaunchTcGemm<64, 64>(Kernels<CT, 64, 64, 32>::Get(), wt, x, T, N, K, y, tile, s, who);
}

}  // namespace g4::cuda
