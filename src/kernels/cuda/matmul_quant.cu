// W4A16 kernels (matmul_quant.h). Every tile edge is bounds-checked: rows past N, x rows past T
// and elements past K load as zero (a zero x element cancels whatever nibble sits beside it).
#include "kernels/cuda/matmul_quant.h"

#include <string>

#include "kernels/cuda/gemv.cuh"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/load.cuh"
#include "kernels/cuda/matmul.h"

namespace g4::cuda {
namespace {

// Element k of a packed row: low nibble for even k, high for odd; stored nibble = q + 8.
__device__ __forceinline__ int Nibble(uint8_t byte, int64_t k) {
  return ((k & 1) ? (byte >> 4) : (byte & 0xf)) - 8;
}

// ---- GEMV ----
constexpr int kQGemvWarps = 8;
constexpr int kQChunk = 1024;  // x elements staged per step (32 lanes x 32 nibbles)
constexpr int kQMaxT = kInt4GemvMaxT;  // x rows per launch: 4 x 1056 floats = 16.5 KiB smem

// x chunk index with one pad float per 32: lane l reads elements 32 l + e, which would all sit in
// one bank without the pad.
__device__ __forceinline__ int XIdx(int kk) { return kk + kk / 32; }
constexpr int kQChunkPadded = kQChunk + kQChunk / 32;

// One warp per weight row n. kFast: K % 32 == 0, group % 32 == 0, rows 16-byte aligned, so a
// lane's 32 nibbles are one uint4 load within one group (one scale).
// The block's segment (GemvSegments) says which weight, scales and y. kGate (GemvGate,
// matmul.h): kWeight (segments gate and up, the grid covering the gate's rows): the warp also
// reads row n of up against the same staged x and writes y[0][t, n] = gelu_tanh(gate . x) *
// (up . x); kRows: y[0][t, n] = gelu_tanh(w . x) * seg.up_rows[t, n]. With seg.residual, the
// grid's last block then runs the ResidualNorm of y (GemvResidualTail, gemv.cuh).
template <bool kFast, GemvGate::Kind kGate>
__global__ void Int4GemvKernel(const GemvSegments seg, int64_t row_bytes, ElemType scale_type,
                               int64_t K, int64_t group, const float* __restrict__ x, int T) {
  GridDependency();
  constexpr int kRows = kGate == GemvGate::kWeight ? 2 : 1;
  __shared__ float xs[kQMaxT][kQChunkPadded];
  const int tid = threadIdx.x, lane = tid % 32;
  const int s = seg.SegmentOf(blockIdx.x);
  const int64_t N = seg.N[s];
  float* __restrict__ y = seg.y[s];
  const int64_t n =
      static_cast<int64_t>(blockIdx.x - seg.first_block[s]) * kQGemvWarps + tid / 32;
  const int64_t groups = K / group;
  const uint8_t* rows[kRows];
  const void* scales[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    rows[r] = static_cast<const uint8_t*>(seg.w[s + r]) + n * row_bytes;
    scales[r] = seg.scales[s + r];
  }
  float acc[kRows][kQMaxT] = {};
  for (int64_t kc = 0; kc < K; kc += kQChunk) {
    __syncthreads();  // the previous chunk is consumed
    for (int idx = tid; idx < kQMaxT * kQChunk; idx += kQGemvWarps * 32) {
      const int t = idx / kQChunk, kk = idx % kQChunk;
      const int64_t k = kc + kk;
      xs[t][XIdx(kk)] = (t < T && k < K) ? x[t * K + k] : 0.0f;
    }
    __syncthreads();
    if (n >= N) continue;  // stays in the loop for the barriers
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      if constexpr (kFast) {
        const int64_t k = kc + 32 * lane;
        if (k < K) {
          const uint4 raw = *reinterpret_cast<const uint4*>(rows[r] + k / 2);
          const float sc = LoadF32(scale_type, scales[r], n * groups + k / group);
          const uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
          float part[kQMaxT] = {};
#pragma unroll
          for (int wi = 0; wi < 4; ++wi) {
#pragma unroll
            for (int j = 0; j < 8; ++j) {
              const float q =
                  static_cast<float>(static_cast<int>((words[wi] >> (4 * j)) & 0xf) - 8);
              const int kk = 32 * lane + 8 * wi + j;
#pragma unroll
              for (int t = 0; t < kQMaxT; ++t) part[t] += q * xs[t][XIdx(kk)];
            }
          }
#pragma unroll
          for (int t = 0; t < kQMaxT; ++t) acc[r][t] += sc * part[t];
        }
      } else {
        const int64_t kend = kc + kQChunk < K ? kc + kQChunk : K;
        for (int64_t k = kc + lane; k < kend; k += 32) {
          const float wv = static_cast<float>(Nibble(rows[r][k / 2], k)) *
                           LoadF32(scale_type, scales[r], n * groups + k / group);
          const int kk = static_cast<int>(k - kc);
#pragma unroll
          for (int t = 0; t < kQMaxT; ++t) acc[r][t] += wv * xs[t][XIdx(kk)];
        }
      }
    }
  }
  if (n < N) GemvEpilogue<kGate>(acc, T, lane, y, N, n, seg);
  if (seg.residual.counter != nullptr) GemvResidualTail<kQGemvWarps * 32>(seg.residual, y, T, N);
}

// ---- GEMM ----
// Stage layout (tiles.h, W4A16StageBytes): x [BK][BM] f32 (k-major), scales [BN][slots] f32,
// packed [BN][BK / 2] bytes. 256 threads as 16 x 16; thread (ty, tx) owns y rows
// m0 + ty + 16 i (i < BM / 16) and columns n0 + tx + 16 j (j < BN / 16). The K steps rotate
// through `stages` buffers: step kt + stages - 1 is loaded before step kt is computed. The loads
// are plain (no cp.async yet), so the ring overlaps only across warps; it is the layout a
// cp.async pipeline will fill.
template <int BM, int BN, int BK>
__global__ void __launch_bounds__(kW4A16Threads)
    Int4GemmKernel(const uint8_t* __restrict__ w, int64_t row_bytes,
                   const void* __restrict__ scales, ElemType scale_type, int64_t N, int64_t K,
                   int64_t group, const float* __restrict__ x, int64_t T, float* __restrict__ y,
                   int stages, int slots) {
  GridDependency();
  extern __shared__ __align__(16) unsigned char smem[];
  constexpr int MI = BM / 16, NJ = BN / 16, HB = BK / 2;
  const int stage_bytes = BM * BK * 4 + BN * slots * 4 + BN * HB;
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const int64_t m0 = static_cast<int64_t>(blockIdx.y) * BM;
  const int64_t n0 = static_cast<int64_t>(blockIdx.x) * BN;
  const int64_t groups = K / group;
  const int64_t ksteps = (K + BK - 1) / BK;

  auto xs_of = [&](int b) { return reinterpret_cast<float*>(smem + b * stage_bytes); };
  auto sc_of = [&](int b) {
    return reinterpret_cast<float*>(smem + b * stage_bytes + BM * BK * 4);
  };
  auto wp_of = [&](int b) {
    return reinterpret_cast<uint8_t*>(smem + b * stage_bytes + BM * BK * 4 + BN * slots * 4);
  };
  auto load = [&](int64_t kt) {
    const int b = static_cast<int>(kt % stages);
    const int64_t k0 = kt * BK;
    float* xs = xs_of(b);
    float* sc = sc_of(b);
    uint8_t* wp = wp_of(b);
    for (int idx = tid; idx < BM * BK; idx += kW4A16Threads) {
      const int r = idx / BK, kk = idx % BK;
      const int64_t t = m0 + r, k = k0 + kk;
      xs[kk * BM + r] = (t < T && k < K) ? x[t * K + k] : 0.0f;
    }
    const int64_t g0 = k0 / group;
    for (int idx = tid; idx < BN * slots; idx += kW4A16Threads) {
      const int c = idx / slots, s = idx % slots;
      const int64_t n = n0 + c, g = g0 + s;
      sc[idx] = (n < N && g < groups) ? LoadF32(scale_type, scales, n * groups + g) : 0.0f;
    }
    for (int idx = tid; idx < BN * HB; idx += kW4A16Threads) {
      const int c = idx / HB, b2 = idx % HB;
      const int64_t n = n0 + c, kb = k0 / 2 + b2;  // k0 is even: BK is
      wp[idx] = (n < N && 2 * kb < K) ? w[n * row_bytes + kb] : 0;
    }
  };

  float acc[MI][NJ] = {};
  for (int64_t kt = 0; kt < stages - 1 && kt < ksteps; ++kt) load(kt);
  for (int64_t kt = 0; kt < ksteps; ++kt) {
    if (kt + stages - 1 < ksteps) load(kt + stages - 1);  // into the buffer freed at kt - 1
    __syncthreads();
    const int b = static_cast<int>(kt % stages);
    const float* xs = xs_of(b);
    const float* sc = sc_of(b);
    const uint8_t* wp = wp_of(b);
    const int64_t k0 = kt * BK, g0 = k0 / group;
#pragma unroll 4
    for (int kk = 0; kk < BK; ++kk) {
      const int slot = static_cast<int>((k0 + kk) / group - g0);
      float a[MI], bw[NJ];
#pragma unroll
      for (int i = 0; i < MI; ++i) a[i] = xs[kk * BM + ty + 16 * i];
#pragma unroll
      for (int j = 0; j < NJ; ++j) {
        const int c = tx + 16 * j;
        bw[j] = static_cast<float>(Nibble(wp[c * HB + kk / 2], kk)) * sc[c * slots + slot];
      }
#pragma unroll
      for (int i = 0; i < MI; ++i) {
#pragma unroll
        for (int j = 0; j < NJ; ++j) acc[i][j] += a[i] * bw[j];
      }
    }
    __syncthreads();  // buffer b is reloaded at step kt + 1
  }
#pragma unroll
  for (int i = 0; i < MI; ++i) {
#pragma unroll
    for (int j = 0; j < NJ; ++j) {
      const int64_t t = m0 + ty + 16 * i, n = n0 + tx + 16 * j;
      if (t < T && n < N) y[t * N + n] = acc[i][j];
    }
  }
}

Status CheckInt4(const TensorView& w, const float* x, int64_t T, const float* y) {
  if (w.quant.kind != QuantKind::kInt4Group || w.shape.size() != 2 || w.dim(0) <= 0 ||
      w.dim(1) <= 0) {
    return InvalidArgument("MatMulInt4Device: weight " + ShapeToString(w.shape) +
                           " is not a non-empty int4 [N, K]");
  }
  const int64_t K = w.dim(1), G = w.quant.group_size;
  if (G <= 0 || K % G != 0) {
    return InvalidArgument("MatMulInt4Device: group size " + std::to_string(G) +
                           " does not divide K = " + std::to_string(K));
  }
  if (w.quant.row_bytes < (K + 1) / 2) {
    return InvalidArgument("MatMulInt4Device: row_bytes " + std::to_string(w.quant.row_bytes) +
                           " < ceil(K / 2) = " + std::to_string((K + 1) / 2));
  }
  if (!IsFloat(w.quant.scale_dtype) || w.quant.scales == nullptr) {
    return InvalidArgument("MatMulInt4Device: scales must be F32/BF16/F16 and present");
  }
  if (T < 0) return InvalidArgument("MatMulInt4Device: T = " + std::to_string(T) + " < 0");
  if (T > 0 && (w.data == nullptr || x == nullptr || y == nullptr)) {
    return InvalidArgument("MatMulInt4Device: null device pointer");
  }
  return Status::Ok();
}

ElemType ScaleTypeOf(DType t) {
  return t == DType::kF32 ? ElemType::kF32 : t == DType::kBF16 ? ElemType::kBF16 : ElemType::kF16;
}

template <int BM, int BN, int BK>
Status LaunchGemm(const TensorView& w, const float* x, int64_t T, float* y, const W4A16Tile& tile,
                  cudaStream_t s) {
  const int64_t N = w.dim(0), K = w.dim(1), G = w.quant.group_size;
  const int64_t slots = W4A16ScaleSlots(BK, G);
  const int64_t smem = W4A16TileSmemBytes(BM, BN, BK, tile.stages, G);
  if (smem != tile.smem_bytes) {
    return Internal("W4A16 GEMM: tile records " + std::to_string(tile.smem_bytes) +
                    " bytes of shared memory, the layout needs " + std::to_string(smem));
  }
  if ((T + BM - 1) / BM > 65535) {
    return InvalidArgument("MatMulInt4Device: T = " + std::to_string(T) + " exceeds the grid");
  }
  auto kernel = Int4GemmKernel<BM, BN, BK>;
  // Dynamic shared memory above the 48 KiB default must be opted in to before the launch.
  if (smem > 48 * 1024 || tile.needs_optin) {
    const cudaError_t e = cudaFuncSetAttribute(
        kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
    if (e != cudaSuccess) {
      return Internal("W4A16 GEMM: cannot opt in to " + std::to_string(smem) +
                      " bytes of shared memory: " + cudaGetErrorString(e));
    }
  }
  const dim3 grid(static_cast<unsigned>((N + BN - 1) / BN), static_cast<unsigned>((T + BM - 1) / BM));
  LaunchKernel(kernel, grid, kW4A16Threads, static_cast<size_t>(smem), s,
               static_cast<const uint8_t*>(w.data), w.quant.row_bytes, w.quant.scales,
               ScaleTypeOf(w.quant.scale_dtype), N, K, G, x, T, y, tile.stages,
               static_cast<int>(slots));
  return LaunchStatus("W4A16 GEMM launch");
}

}  // namespace

// Int4GemvKernel<kFast, kGate> for a run-time gate.
template <bool kFast>
void LaunchInt4Gemv(GemvGate::Kind gate, unsigned blocks, cudaStream_t stream,
                    const GemvSegments& rows, int64_t row_bytes, ElemType st, int64_t K, int64_t G,
                    const float* x, int tc) {
  const int threads = kQGemvWarps * 32;
  switch (gate) {
    case GemvGate::kNone:
      LaunchKernel(Int4GemvKernel<kFast, GemvGate::kNone>, blocks, threads, 0, stream, rows,
                   row_bytes, st, K, G, x, tc);
      break;
    case GemvGate::kWeight:
      LaunchKernel(Int4GemvKernel<kFast, GemvGate::kWeight>, blocks, threads, 0, stream, rows,
                   row_bytes, st, K, G, x, tc);
      break;
    case GemvGate::kRows:
      LaunchKernel(Int4GemvKernel<kFast, GemvGate::kRows>, blocks, threads, 0, stream, rows,
                   row_bytes, st, K, G, x, tc);
      break;
  }
}

Status Int4GemvGroupDevice(const TensorView* const* w, float* const* y, int count,
                           const GemvGate& gate, const float* x, int64_t T, cudaStream_t stream) {
  if (!GemvGroupable(w, count, /*T=*/0) || !w[0]->quantized()) {  // any T: chunks of kQMaxT
    return InvalidArgument("Int4GemvGroupDevice: not one int4 group of K and storage");
  }
  G4_RETURN_IF_ERROR(CheckGemvGate(w, count, gate, T, kQMaxT, "Int4GemvGroupDevice"));
  for (int i = 0; i < count; ++i) G4_RETURN_IF_ERROR(CheckInt4(*w[i], x, T, y[i]));
  if (T == 0) return Status::Ok();
  const TensorView& a = *w[0];
  const int64_t K = a.dim(1), G = a.quant.group_size, row_bytes = a.quant.row_bytes;
  bool fast = K % 32 == 0 && G % 32 == 0 && row_bytes % 16 == 0;
  for (int i = 0; i < count; ++i) {
    fast = fast && reinterpret_cast<uintptr_t>(w[i]->data) % 16 == 0;
  }
  const GemvSegments seg = GemvSegmentsOf(w, y, count, kQGemvWarps);
  const ElemType st = ScaleTypeOf(a.quant.scale_dtype);
  const unsigned blocks =
      gate.kind == GemvGate::kWeight ? seg.first_block[1] : seg.first_block[count];
  for (int64_t t0 = 0; t0 < T; t0 += kQMaxT) {
    const int tc = static_cast<int>(T - t0 < kQMaxT ? T - t0 : kQMaxT);
    const GemvSegments rows = GemvRowsFrom(seg, gate, t0);
    if (fast) {
      LaunchInt4Gemv<true>(gate.kind, blocks, stream, rows, row_bytes, st, K, G, x + t0 * K, tc);
    } else {
      LaunchInt4Gemv<false>(gate.kind, blocks, stream, rows, row_bytes, st, K, G, x + t0 * K, tc);
    }
  }
  return LaunchStatus("W4A16 GEMV launch");
}

Status Int4GemvDevice(const TensorView& w, const float* x, int64_t T, float* y,
                      cudaStream_t stream) {
  G4_RETURN_IF_ERROR(CheckInt4(w, x, T, y));
  const TensorView* ws[1] = {&w};
  float* ys[1] = {y};
  return Int4GemvGroupDevice(ws, ys, 1, GemvGate{}, x, T, stream);
}

Status Int4GemmDevice(const TensorView& w, const float* x, int64_t T, float* y,
                      const W4A16Tile& tile, cudaStream_t stream) {
  G4_RETURN_IF_ERROR(CheckInt4(w, x, T, y));
  if (tile.stages < 1) return InvalidArgument("W4A16 GEMM: tile has no stages");
  if (T == 0) return Status::Ok();
  if (tile.bk == 64 && tile.bm == 128 && tile.bn == 128) {
    return LaunchGemm<128, 128, 64>(w, x, T, y, tile, stream);
  }
  if (tile.bk == 64 && tile.bm == 64 && tile.bn == 128) {
    return LaunchGemm<64, 128, 64>(w, x, T, y, tile, stream);
  }
  if (tile.bk == 64 && tile.bm == 64 && tile.bn == 64) {
    return LaunchGemm<64, 64, 64>(w, x, T, y, tile, stream);
  }
  return InvalidArgument("W4A16 GEMM: no kernel for tile " + std::to_string(tile.bm) + "x" +
                         std::to_string(tile.bn) + "x" + std::to_string(tile.bk));
}

Status MatMulInt4Device(const TensorView& w, const float* x, int64_t T, float* y,
                        const DeviceLimits& dev, cudaStream_t stream) {
  G4_RETURN_IF_ERROR(CheckInt4(w, x, T, y));
  if (T <= kGemvMaxT) return Int4GemvDevice(w, x, T, y, stream);
  // The refusal (a device too small for every tile) comes here, before anything is launched.
  G4_ASSIGN_OR_RETURN(W4A16Tile tile, ChooseW4A16Tile(dev.smem_optin, dev.smem_default, dev.cc,
                                                      w.dim(1), w.quant.group_size));
  return Int4GemmDevice(w, x, T, y, tile, stream);
}

}  // namespace g4::cuda
