// Dense MatMul kernels (matmul.h). Indexing is kept plain on purpose: every tile edge (T, N, K
// not multiples of anything) is bounds-checked and loads outside the tensor read as zero.
#include "kernels/cuda/matmul.h"

#include <string>

#include "kernels/cuda/gemm.cuh"
#include "kernels/cuda/gemv.cuh"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/load.cuh"
#include "kernels/cuda/matmul_quant.h"

namespace g4::cuda {
namespace {

// Weight element loaders: the stored type widened to f32.
struct F32W {
  using Elem = float;
  static __device__ float Load(const Elem* p, int64_t i) { return p[i]; }
};
struct Bf16W {
  using Elem = uint16_t;
  static __device__ float FromBits(uint32_t bits) { return Bf16BitsToF32(bits); }
  static __device__ float Load(const Elem* p, int64_t i) { return FromBits(p[i]); }
};
struct F16W {
  using Elem = uint16_t;
  static __device__ float FromBits(uint32_t bits) { return F16BitsToF32(bits); }
  static __device__ float Load(const Elem* p, int64_t i) { return FromBits(p[i]); }
};

// 16 bytes of weights (8 16-bit or 4 f32 elements, little-endian: element 0 in the low bits of
// raw.x) widened to f32.
template <typename WT>
__device__ void Widen16(const uint4& raw, float* out) {
  const uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
  if constexpr (sizeof(typename WT::Elem) == 4) {
#pragma unroll
    for (int e = 0; e < 4; ++e) out[e] = __uint_as_float(words[e]);
  } else {
#pragma unroll
    for (int e = 0; e < 8; ++e) out[e] = WT::FromBits((words[e / 2] >> (16 * (e % 2))) & 0xffffu);
  }
}

constexpr int kGemvWarps = 8;

// One warp's weight row n (and up's, for kWeight) against the T rows of x, through the
// epilogue: DenseGemvKernel's work.
template <typename WT, GemvGate::Kind kGate>
__device__ __forceinline__ void DenseGemvRow(const GemvSegments& seg, int s, int64_t K,
                                             const float* __restrict__ x, int T, bool vec,
                                             float* __restrict__ y, int64_t N, int64_t n) {
  constexpr int kVec = 16 / sizeof(typename WT::Elem);
  constexpr int kRows = kGate == GemvGate::kWeight ? 2 : 1;
  const int lane = threadIdx.x % 32;
  const typename WT::Elem* rows[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    rows[r] = static_cast<const typename WT::Elem*>(seg.w[s + r]) + n * K;
  }
  float acc[kRows][kGemvMaxT] = {};
  if (vec) {
    for (int64_t c = lane; c * kVec < K; c += 32) {
      const int64_t k = c * kVec;
      float wv[kRows][kVec];
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        Widen16<WT>(*reinterpret_cast<const uint4*>(rows[r] + k), wv[r]);
      }
#pragma unroll
      for (int t = 0; t < kGemvMaxT; ++t) {
        if (t >= T) break;
        const float4* xp = reinterpret_cast<const float4*>(x + t * K + k);
#pragma unroll
        for (int q = 0; q < kVec / 4; ++q) {
          const float4 xv = xp[q];
#pragma unroll
          for (int r = 0; r < kRows; ++r) {
            acc[r][t] += wv[r][4 * q] * xv.x + wv[r][4 * q + 1] * xv.y +
                         wv[r][4 * q + 2] * xv.z + wv[r][4 * q + 3] * xv.w;
          }
        }
      }
    }
  } else {
    for (int64_t k = lane; k < K; k += 32) {
      float wk[kRows];
#pragma unroll
      for (int r = 0; r < kRows; ++r) wk[r] = WT::Load(rows[r], k);
#pragma unroll
      for (int t = 0; t < kGemvMaxT; ++t) {
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
          if (t < T) acc[r][t] += wk[r] * x[t * K + k];
        }
      }
    }
  }
  GemvEpilogue<kGate>(acc, T, lane, y, N, n, seg);
}

// y[t, n] for every t < T (<= kGemvMaxT): one warp per weight row n, so the row is read once
// for all T; the block's segment (GemvSegments) says which weight and y. `vec`: rows and x are
// 16-byte aligned with K a multiple of the 16-byte element count, so lanes load 16 bytes at a
// time; otherwise one element at a time. kGate (GemvGate, matmul.h): kWeight (segments gate
// and up, the grid covering the gate's rows): the warp also reads row n of up, on the same x
// loads, and writes y[0][t, n] = gelu_tanh(gate . x) * (up . x) (the MLP's GeluMul in the
// epilogue); kRows: y[0][t, n] = gelu_tanh(w . x) * seg.up_rows[t, n]. With seg.residual, the
// grid's last block then runs the ResidualNorm of y (GemvResidualTail).
template <typename WT, GemvGate::Kind kGate>
__global__ void DenseGemvKernel(const GemvSegments seg, int64_t K, const float* __restrict__ x,
                                int T, bool vec) {
  PrefetchGemvRows<kGate>(seg, kGemvWarps, K * static_cast<int64_t>(sizeof(typename WT::Elem)),
                          0);
  GridDependency();
  const int s = seg.SegmentOf(blockIdx.x);
  const int64_t N = seg.N[s];
  float* __restrict__ y = seg.y[s];
  const int64_t n =
      static_cast<int64_t>(blockIdx.x - seg.first_block[s]) * kGemvWarps + threadIdx.x / 32;
  if (n < N) DenseGemvRow<WT, kGate>(seg, s, K, x, T, vec, y, N, n);
  if (seg.residual.counter != nullptr) GemvResidualTail<kGemvWarps * 32>(seg.residual, y, T, N);
}

// The tensor-core GEMM of 16-bit weights in the compute type (gemm.cuh).
template <typename CT, int BM, int BN, int BK>
__global__ void __launch_bounds__(kGemmThreads)
    DenseTcGemmKernel(const DenseWTile wt, const float* __restrict__ x, int64_t T, int64_t N,
                      int64_t K, float* __restrict__ y, int stages) {
  GridDependency();
  extern __shared__ __align__(16) unsigned char smem[];
  TcGemmBlock<CT, DenseWTile, BM, BN, BK>(smem, wt, x, T, N, K, y, stages);
}
template <typename CT, int BM, int BN, int BK>
struct DenseTcGemm {
  static auto Get() { return DenseTcGemmKernel<CT, BM, BN, BK>; }
};

// The f32 GEMM (f32 weights, bf16 weights below SM 8.0, a device without a tensor-core tile):
// a block computes a 64 x 64 tile of y (64 rows of x by 64 rows of w) with 256
// threads; thread (ty, tx) owns y rows m0 + ty + 16 i and columns n0 + tx + 16 j (i, j < 4), so
// neighbouring threads write neighbouring columns. K is walked in steps of 16 through shared
// memory, stored k-major so the inner loop reads rows of both tiles.
constexpr int kGemmBM = 64, kGemmBN = 64, kGemmBK = 16;

template <typename WT>
__global__ void DenseGemmKernel(const typename WT::Elem* __restrict__ w, int64_t N, int64_t K,
                                const float* __restrict__ x, int64_t T, float* __restrict__ y) {
  GridDependency();
  __shared__ float xs[kGemmBK][kGemmBM];
  __shared__ float ws[kGemmBK][kGemmBN];
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const int64_t m0 = static_cast<int64_t>(blockIdx.y) * kGemmBM;
  const int64_t n0 = static_cast<int64_t>(blockIdx.x) * kGemmBN;
  float acc[4][4] = {};
  for (int64_t k0 = 0; k0 < K; k0 += kGemmBK) {
    for (int idx = tid; idx < kGemmBM * kGemmBK; idx += 256) {
      const int r = idx / kGemmBK, kk = idx % kGemmBK;
      const int64_t t = m0 + r, n = n0 + r, k = k0 + kk;
      xs[kk][r] = (t < T && k < K) ? x[t * K + k] : 0.0f;
      ws[kk][r] = (n < N && k < K) ? WT::Load(w, n * K + k) : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kGemmBK; ++kk) {
      float a[4], b[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) a[i] = xs[kk][ty + 16 * i];
#pragma unroll
      for (int j = 0; j < 4; ++j) b[j] = ws[kk][tx + 16 * j];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] += a[i] * b[j];
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int64_t t = m0 + ty + 16 * i, n = n0 + tx + 16 * j;
      if (t < T && n < N) y[t * N + n] = acc[i][j];
    }
  }
}

Status CheckDense(const TensorView& w, const float* x, int64_t T, const float* y) {
  if (w.shape.size() != 2 || w.dim(0) <= 0 || w.dim(1) <= 0) {
    return InvalidArgument("MatMulDevice: weight shape " + ShapeToString(w.shape) +
                           " is not a non-empty [N, K]");
  }
  if (w.quantized() || !IsFloat(w.dtype)) {
    return InvalidArgument(std::string("MatMulDevice: dense path given weight dtype ") +
                           DTypeName(w.dtype) + (w.quantized() ? " (quantized)" : ""));
  }
  if (T < 0) return InvalidArgument("MatMulDevice: T = " + std::to_string(T) + " < 0");
  if (T > 0 && (w.data == nullptr || x == nullptr || y == nullptr)) {
    return InvalidArgument("MatMulDevice: null device pointer");
  }
  return Status::Ok();
}

bool Aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// DenseGemvKernel<WT, kGate> for a run-time gate.
template <typename WT>
void LaunchDenseGemv(GemvGate::Kind gate, unsigned blocks, cudaStream_t s,
                     const GemvSegments& rows, int64_t K, const float* x, int tc, bool vec) {
  const int threads = kGemvWarps * 32;
  switch (gate) {
    case GemvGate::kNone:
      LaunchKernel(DenseGemvKernel<WT, GemvGate::kNone>, blocks, threads, 0, s, rows, K, x, tc,
                   vec);
      break;
    case GemvGate::kWeight:
      LaunchKernel(DenseGemvKernel<WT, GemvGate::kWeight>, blocks, threads, 0, s, rows, K, x, tc,
                   vec);
      break;
    case GemvGate::kRows:
      LaunchKernel(DenseGemvKernel<WT, GemvGate::kRows>, blocks, threads, 0, s, rows, K, x, tc,
                   vec);
      break;
  }
}

// w[0..count) dense weights of one dtype and K (GemvGroupable), in one grid per kGemvMaxT rows,
// with the epilogue `gate` (CheckGemvGate'd; kWeight: the grid over the gate's rows).
template <typename WT>
Status LaunchGemv(const TensorView* const* w, float* const* y, int count, const GemvGate& gate,
                  const float* x, int64_t T, cudaStream_t s) {
  const int64_t K = w[0]->dim(1);
  constexpr int64_t kVec = 16 / sizeof(typename WT::Elem);
  // Row n starts at n * K elements: 16-byte aligned for every n iff the base is and K is a
  // multiple of the vector width (and likewise for the rows of x).
  bool vec = Aligned16(x) && K % kVec == 0 && K % 4 == 0;
  const GemvSegments seg = GemvSegmentsOf(w, y, count, kGemvWarps);
  for (int i = 0; i < count; ++i) vec = vec && Aligned16(w[i]->data);
  const unsigned blocks =
      gate.kind == GemvGate::kWeight ? seg.first_block[1] : seg.first_block[count];
  for (int64_t t0 = 0; t0 < T; t0 += kGemvMaxT) {
    const int tc = static_cast<int>(T - t0 < kGemvMaxT ? T - t0 : kGemvMaxT);
    const GemvSegments rows = GemvRowsFrom(seg, gate, t0);
    LaunchDenseGemv<WT>(gate.kind, blocks, s, rows, K, x + t0 * K, tc, vec);
  }
  return LaunchStatus("dense GEMV launch");
}

template <typename WT>
Status LaunchGemm(const TensorView& w, const float* x, int64_t T, float* y, cudaStream_t s) {
  const int64_t N = w.dim(0), K = w.dim(1);
  const dim3 grid(static_cast<unsigned>((N + kGemmBN - 1) / kGemmBN),
                  static_cast<unsigned>((T + kGemmBM - 1) / kGemmBM));
  if ((T + kGemmBM - 1) / kGemmBM > 65535) {
    return InvalidArgument("MatMulDevice: T = " + std::to_string(T) + " exceeds the GEMM grid");
  }
  LaunchKernel(DenseGemmKernel<WT>, grid, 256, 0, s,
               static_cast<const typename WT::Elem*>(w.data), N, K, x, T, y);
  return LaunchStatus("dense GEMM launch");
}

// Fn<WT>::Run(args...) for the weight type of `dtype`.
template <template <typename> class Fn, typename... Args>
Status ByDType(DType dtype, Args... args) {
  switch (dtype) {
    case DType::kF32: return Fn<F32W>::Run(args...);
    case DType::kBF16: return Fn<Bf16W>::Run(args...);
    case DType::kF16: return Fn<F16W>::Run(args...);
    default: return InvalidArgument("MatMulDevice: unsupported weight dtype");
  }
}
template <typename WT>
struct GemvFn {
  static Status Run(const TensorView* const* w, float* const* y, int count, const GemvGate* gate,
                    const float* x, int64_t T, cudaStream_t s) {
    return LaunchGemv<WT>(w, y, count, *gate, x, T, s);
  }
};
template <typename WT>
struct GemmFn {
  static Status Run(const TensorView* w, const float* x, int64_t T, float* y, cudaStream_t s) {
    return LaunchGemm<WT>(*w, x, T, y, s);
  }
};

}  // namespace

GemvSegments GemvSegmentsOf(const TensorView* const* w, float* const* y, int count,
                            int rows_per_block) {
  GemvSegments seg;
  seg.count = count;
  for (int i = 0; i < count; ++i) {
    seg.w[i] = w[i]->data;
    seg.scales[i] = w[i]->quant.scales;
    seg.y[i] = y[i];
    seg.N[i] = w[i]->dim(0);
    const int64_t blocks = (seg.N[i] + rows_per_block - 1) / rows_per_block;
    seg.first_block[i + 1] = seg.first_block[i] + static_cast<unsigned>(blocks);
  }
  return seg;
}

GemvSegments GemvRowsFrom(const GemvSegments& seg, const GemvGate& gate, int64_t t0) {
  GemvSegments rows = seg;
  for (int i = 0; i < seg.count; ++i) rows.y[i] = seg.y[i] + t0 * seg.N[i];
  if (gate.kind == GemvGate::kRows) {
    rows.up_rows = gate.up_rows + t0 * gate.up_stride;
    rows.up_stride = gate.up_stride;
  }
  rows.residual = gate.residual;  // CheckGemvGate'd: then t0 is 0
  return rows;
}

Status CheckGemvGate(const TensorView* const* w, int count, const GemvGate& gate, int64_t T,
                     int64_t max_t, const char* who) {
  if (gate.residual.counter != nullptr && (gate.kind != GemvGate::kNone || count != 1 ||
                                           T > max_t)) {
    return InvalidArgument(std::string(who) + ": a residual tail needs one weight without a "
                           "gate and T = " + std::to_string(T) + " <= " + std::to_string(max_t) +
                           " rows (one launch)");
  }
  if (gate.kind == GemvGate::kWeight && (count != 2 || w[0]->dim(0) != w[1]->dim(0))) {
    return InvalidArgument(std::string(who) + ": a gated group is a gate and an up of one N");
  }
  if (gate.kind == GemvGate::kRows &&
      (count != 1 || gate.up_rows == nullptr || gate.up_stride < w[0]->dim(0))) {
    return InvalidArgument(std::string(who) + ": a gelu_up group is one weight and rows of up "
                           "at least N apart");
  }
  return Status::Ok();
}

bool GemvGroupable(const TensorView* const* w, int count, int64_t T) {
  if (count < 1 || count > kMaxMatMulGroup || T > kGemvMaxT) return false;
  const TensorView& a = *w[0];
  if (a.shape.size() != 2) return false;
  for (int i = 0; i < count; ++i) {
    const TensorView& b = *w[i];
    if (b.shape.size() != 2 || b.dim(1) != a.dim(1) || b.dim(0) <= 0 || b.dtype != a.dtype ||
        b.quant.kind != a.quant.kind) {
      return false;
    }
    if (a.quant.kind == QuantKind::kInt4Group) {
      if (b.quant.group_size != a.quant.group_size || b.quant.row_bytes != a.quant.row_bytes ||
          b.quant.scale_dtype != a.quant.scale_dtype) {
        return false;
      }
    } else if (a.quantized() || !IsFloat(a.dtype)) {
      return false;
    }
  }
  return true;
}

Status GroupedGemvDevice(const TensorView* const* w, float* const* y, int count,
                         const GemvGate& gate, const float* x, int64_t T, cudaStream_t stream) {
  if (!GemvGroupable(w, count, T)) {
    return InvalidArgument("GroupedGemvDevice: weights do not share K and storage, or T = " +
                           std::to_string(T) + " > " + std::to_string(kGemvMaxT));
  }
  if (w[0]->quantized()) return Int4GemvGroupDevice(w, y, count, gate, x, T, stream);
  G4_RETURN_IF_ERROR(CheckGemvGate(w, count, gate, T, kGemvMaxT, "GroupedGemvDevice"));
  for (int i = 0; i < count; ++i) G4_RETURN_IF_ERROR(CheckDense(*w[i], x, T, y[i]));
  if (T == 0) return Status::Ok();
  return ByDType<GemvFn>(w[0]->dtype, w, y, count, &gate, x, T, stream);
}

Status DenseGemvDevice(const TensorView& w, const float* x, int64_t T, float* y,
                       cudaStream_t stream) {
  G4_RETURN_IF_ERROR(CheckDense(w, x, T, y));
  if (T == 0) return Status::Ok();
  const TensorView* ws[1] = {&w};
  float* ys[1] = {y};
  const GemvGate plain;
  return ByDType<GemvFn>(w.dtype, ws, ys, 1, &plain, x, T, stream);
}

Status DenseGemmDevice(const TensorView& w, const float* x, int64_t T, float* y,
                       const DeviceLimits& dev, cudaStream_t stream, const GemmTile* tile) {
  G4_RETURN_IF_ERROR(CheckDense(w, x, T, y));
  if (T == 0) return Status::Ok();
  const bool bf16 = w.dtype == DType::kBF16;
  if ((bf16 || w.dtype == DType::kF16) && TcGemmSupported(bf16, dev.cc)) {
    StatusOr<GemmTile> chosen = tile != nullptr
                                    ? StatusOr<GemmTile>(*tile)
                                    : ChooseGemmTile(dev.smem_optin, dev.smem_default, dev.cc, 1);
    if (chosen.ok()) {
      const DenseWTile wt{static_cast<const uint16_t*>(w.data)};
      const int64_t N = w.dim(0), K = w.dim(1);
      constexpr const char* kWho = "dense GEMM";
      return bf16 ? RunTcGemm<DenseTcGemm, __nv_bfloat16>(wt, x, T, N, K, y, *chosen, stream,
                                                           kWho)
                  : RunTcGemm<DenseTcGemm, __half>(wt, x, T, N, K, y, *chosen, stream, kWho);
    }
  }
  return ByDType<GemmFn>(w.dtype, &w, x, T, y, stream);
}

Status MatMulDevice(const TensorView& w, const float* x, int64_t T, float* y,
                    const DeviceLimits& dev, cudaStream_t stream) {
  if (w.quant.kind == QuantKind::kInt4Group) return MatMulInt4Device(w, x, T, y, dev, stream);
  if (w.quantized()) {
    return Unimplemented(std::string("MatMulDevice: no CUDA kernel for ") +
                         QuantKindName(w.quant.kind) + " weights yet");
  }
  return T <= kGemvMaxT ? DenseGemvDevice(w, x, T, y, stream)
                        : DenseGemmDevice(w, x, T, y, dev, stream);
}

}  // namespace g4::cuda
