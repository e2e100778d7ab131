// W4A16 kernels (matmul_quant.h). Every edge is bounds-checked: rows past N, x rows past T and
// elements past K load as zero (a zero x element cancels whatever nibble sits beside it).
#include "kernels/cuda/matmul_quant.h"

#include <string>

#include "kernels/cuda/gemm.cuh"
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
  PrefetchGemvRows<kGate>(seg, kQGemvWarps, row_bytes,
                          (K / group) * (scale_type == ElemType::kF32 ? 4 : 2));
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

// ---- GEMM (gemm.cuh) ----
template <typename CT, int BM, int BN, int BK>
__global__ void __launch_bounds__(kGemmThreads)
    Int4TcGemmKernel(const Int4WTile wt, const float* __restrict__ x, int64_t T, int64_t N,
                     int64_t K, float* __restrict__ y, int stages) {
  GridDependency();
  extern __shared__ __align__(16) unsigned char smem[];
  TcGemmBlock<CT, Int4WTile, BM, BN, BK>(smem, wt, x, T, N, K, y, stages);
}
template <typename CT, int BM, int BN, int BK>
struct Int4TcGemm {
  static auto Get() { return Int4TcGemmKernel<CT, BM, BN, BK>; }
};

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
                      const W4A16Tile& tile, int cc, cudaStream_t stream) {
  G4_RETURN_IF_ERROR(CheckInt4(w, x, T, y));
  if (T == 0) return Status::Ok();
  const Int4WTile wt{static_cast<const uint8_t*>(w.data), w.quant.row_bytes, w.quant.scales,
                     ScaleTypeOf(w.quant.scale_dtype), w.quant.group_size};
  constexpr const char* kWho = "W4A16 GEMM";
  if (TcGemmSupported(/*bf16=*/true, cc)) {
    return RunTcGemm<Int4TcGemm, __nv_bfloat16>(wt, x, T, w.dim(0), w.dim(1), y, tile, stream,
                                                kWho);
  }
  return RunTcGemm<Int4TcGemm, __half>(wt, x, T, w.dim(0), w.dim(1), y, tile, stream, kWho);
}

Status MatMulInt4Device(const TensorView& w, const float* x, int64_t T, float* y,
                        const DeviceLimits& dev, cudaStream_t stream) {
  G4_RETURN_IF_ERROR(CheckInt4(w, x, T, y));
  if (T <= kGemvMaxT) return Int4GemvDevice(w, x, T, y, stream);
  // The refusal (a device too small for every tile) comes here, before anything is launched.
  G4_ASSIGN_OR_RETURN(W4A16Tile tile, ChooseW4A16Tile(dev.smem_optin, dev.smem_default, dev.cc,
                                                      w.dim(1), w.quant.group_size));
  return Int4GemmDevice(w, x, T, y, tile, dev.cc, stream);
}

}  // namespace g4::cuda
