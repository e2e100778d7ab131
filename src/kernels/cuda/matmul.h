// CUDA MatMul (ops/matmul.h): y[T, N] = x[T, K] @ w[N, K]^T with every pointer on the device.
// Float weights (F32/BF16/F16) are widened to f32 in registers, accumulation is f32. Small T
// (decode) runs a GEMV, one warp per weight row; larger T a shared-memory tiled FMA GEMM (plain
// FMA, no tensor cores yet: correctness first, mma.sync is a later step). Int4 group weights go
// to matmul_quant.h; other quantized kinds are Unimplemented here.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/status.h"
#include "core/tensor.h"
#include "kernels/cuda/tiles.h"

namespace g4::cuda {

// T at or below this runs the GEMV kernels (dense and int4); above it the tiled GEMMs.
inline constexpr int64_t kGemvMaxT = 8;

// w.data (and w.quant.scales) on the device; x: [T, K] f32, y: [T, N] f32 device buffers, y not
// aliasing x. Launches on `stream` and returns without synchronizing; InvalidArgument for shapes
// or dtypes the op does not define, Internal for a failed launch.
Status MatMulDevice(const TensorView& w, const float* x, int64_t T, float* y,
                    const DeviceLimits& dev, cudaStream_t stream);

// The two dense paths, for tests that must reach each regardless of T.
Status DenseGemvDevice(const TensorView& w, const float* x, int64_t T, float* y,
                       cudaStream_t stream);
Status DenseGemmDevice(const TensorView& w, const float* x, int64_t T, float* y,
                       cudaStream_t stream);

}  // namespace g4::cuda
