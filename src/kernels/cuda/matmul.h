// CUDA MatMul (ops/matmul.h): y[T, N] = x[T, K] @ w[N, K]^T with every pointer on the device.
// Small T (decode) runs a GEMV, one warp per weight row, float weights (F32/BF16/F16) widened to
// f32 in registers, accumulated in f32. Larger T runs the tensor-core GEMM (gemm.cuh) for 16-bit
// weights (x split into hi + lo parts of the weights' type, so close to f32), an f32 tiled GEMM
// otherwise. Int4 group weights go to matmul_quant.h; other quantized kinds are Unimplemented
// here.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/status.h"
#include "core/tensor.h"
#include "kernels/cuda/tiles.h"
#include "ops/matmul.h"

namespace g4::cuda {

// T at or below this runs the GEMV kernels (dense and int4); above it the tiled GEMMs.
inline constexpr int64_t kGemvMaxT = 8;
// x rows per launch of the int4 GEMV (its static shared memory holds this many x chunks).
inline constexpr int64_t kInt4GemvMaxT = 4;

// w.data (and w.quant.scales) on the device; x: [T, K] f32, y: [T, N] f32 device buffers, y not
// aliasing x. Launches on `stream` and returns without synchronizing; InvalidArgument for shapes
// or dtypes the op does not define, Internal for a failed launch.
Status MatMulDevice(const TensorView& w, const float* x, int64_t T, float* y,
                    const DeviceLimits& dev, cudaStream_t stream);

// What a GEMV grid writes to y[0][t, n]: x . w[0] row n (kNone: and likewise for every
// segment); gelu_tanh(x . gate) * (x . up) (kWeight: segments gate and up of one N, the grid
// over the gate's rows, one warp reading both rows); gelu_tanh(x . w[0]) * up_rows[t * up_stride
// + n] (kRows: the PLE branch's per-layer inputs).
//
// GemvResidual: a ResidualNorm (ops/residual_norm.h) after a one-weight kNone GEMV whose T rows
// fit one launch, with its y ([T, N], N = D) as x: every block counts itself done on `counter`
// and the last one runs the norm for all T rows (residual_norm.cuh), then resets the counter
// to 0 for the next launch. Norm weights as NormWeight gives them (norm_weight.cuh): device
// pointers or nullptr, their types ElemType values (load.cuh).
struct GemvResidual {
  unsigned* counter = nullptr;  // nullptr: no ResidualNorm; else 0 before the launch
  const void* w = nullptr;
  int w_type = 0;
  float* h = nullptr;           // [T, N] the residual stream, in place
  float scale = 1.0f;
  const void* next_w = nullptr;
  int next_type = 0;
  float* out = nullptr;         // [T, N] or nullptr
  float eps = 0.0f;
};

struct GemvGate {
  enum Kind : int { kNone, kWeight, kRows };
  Kind kind = kNone;
  const float* up_rows = nullptr;  // kRows
  int64_t up_stride = 0;
  GemvResidual residual;           // kNone, one weight, T within one launch
};

// The GEMV rows of up to kMaxMatMulGroup weights that share x, K and storage, launched as one
// grid: segment s is blocks [first_block[s], first_block[s + 1]), each block the rows of one
// weight (dense and int4 GEMV kernels alike), and the epilogue's `up` rows (GemvGate::kRows).
struct GemvSegments {
  const void* w[kMaxMatMulGroup] = {};
  const void* scales[kMaxMatMulGroup] = {};  // int4 weights
  float* y[kMaxMatMulGroup] = {};
  int64_t N[kMaxMatMulGroup] = {};
  unsigned first_block[kMaxMatMulGroup + 1] = {};
  int count = 0;
  const float* up_rows = nullptr;
  int64_t up_stride = 0;
  GemvResidual residual;

  __host__ __device__ int SegmentOf(unsigned block) const {
    int s = 0;
    while (s + 1 < count && block >= first_block[s + 1]) ++s;
    return s;
  }
};

// The segments of weights w[0..count) (device copies) writing y[0..count), rows_per_block rows
// per block.
GemvSegments GemvSegmentsOf(const TensorView* const* w, float* const* y, int count,
                            int rows_per_block);

// seg for the launch of x rows from t0: y and the gate's up rows advanced by t0 rows.
GemvSegments GemvRowsFrom(const GemvSegments& seg, const GemvGate& gate, int64_t t0);

// Whether device weights w[0..count) run as one grouped GEMV for T rows of x: T <= kGemvMaxT,
// one K, and all float weights of one dtype or all int4 with one group size, row width and
// scale dtype.
bool GemvGroupable(const TensorView* const* w, int count, int64_t T);
// y[i] = x @ w[i]^T for a GemvGroupable group, one launch per kGemvMaxT (dense) or
// kInt4GemvMaxT (int4) rows of x, with the epilogue `gate` (kWeight: count 2, gate and up of one
// N, y[1] not written; kRows: count 1; a residual: count 1, T within one launch);
// InvalidArgument for a group that is not.
Status GroupedGemvDevice(const TensorView* const* w, float* const* y, int count,
                         const GemvGate& gate, const float* x, int64_t T, cudaStream_t stream);
// InvalidArgument naming `who` unless `gate` fits the group of T rows (kWeight: 2 weights of
// one N; kRows: 1 weight, rows at least N apart; a residual: kNone, 1 weight, T <= max_t, the
// rows per launch).
Status CheckGemvGate(const TensorView* const* w, int count, const GemvGate& gate, int64_t T,
                     int64_t max_t, const char* who);

// The two dense paths, for tests that must reach each regardless of T. The GEMM runs on tensor
// cores (gemm.cuh) for bf16 weights on SM >= 8.0 and f16 weights, in `tile` (a kGemmCandidates
// shape with its dense bytes, fitting the device) or, when null, ChooseGemmTile's for `dev`;
// otherwise (f32 weights, bf16 below SM 8.0, no tile fits) it is a 64 x 64 f32 GEMM.
Status DenseGemvDevice(const TensorView& w, const float* x, int64_t T, float* y,
                       cudaStream_t stream);
Status DenseGemmDevice(const TensorView& w, const float* x, int64_t T, float* y,
                       const DeviceLimits& dev, cudaStream_t stream,
                       const GemmTile* tile = nullptr);

}  // namespace g4::cuda
