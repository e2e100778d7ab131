// CUDA W4A16 MatMul: y[T, N] = x[T, K] @ dequant(w)^T for int4 group weights in the
// compressed-tensors layout (core/tensor.h: row n at data + n * row_bytes, low nibble = even k,
// stored nibble = q + 8, scales [N, K / group] in BF16/F16/F32), all pointers on the device,
// dequantized in registers (q * scale), accumulated in f32.
//   T <= kGemvMaxT: fused dequant GEMV. A block of 8 warps stages a chunk of x in shared memory;
//     each warp streams one packed row (16 bytes = 32 nibbles per lane per step when the layout
//     is aligned) and its scales exactly once, so the kernel is bound by the weight bytes.
//   T > kGemvMaxT: tensor-core GEMM (gemm.cuh: bf16 on SM >= 8.0, f16 below; x and the
//     dequantized weights split into hi + lo parts, so close to f32) with the shared-memory tile
//     ChooseW4A16Tile picks for the device (tiles.h); a device that cannot hold the smallest
//     tile gets that Status before any launch.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/status.h"
#include "core/tensor.h"
#include "kernels/cuda/matmul.h"
#include "kernels/cuda/tiles.h"

namespace g4::cuda {

// Dispatch on T as above. InvalidArgument for a view that is not a well-formed int4 [N, K]
// (group dividing K, row_bytes >= ceil(K / 2), float scales) or a tile that does not fit `dev`.
Status MatMulInt4Device(const TensorView& w, const float* x, int64_t T, float* y,
                        const DeviceLimits& dev, cudaStream_t stream);

// The two paths, for tests that must reach each one (and each tile) regardless of T. The GEMM
// takes the tile explicitly (a kGemmCandidates shape with its W4A16 bytes, fitting the device)
// and the compute capability cc that picks the compute type.
Status Int4GemvDevice(const TensorView& w, const float* x, int64_t T, float* y,
                      cudaStream_t stream);
// The GEMV of int4 weights w[0..count) that share K, group size, row width and scale dtype
// (GemvGroupable, matmul.h), each into y[i], in one grid per 4 rows of x; `gate` as in
// GroupedGemvDevice.
Status Int4GemvGroupDevice(const TensorView* const* w, float* const* y, int count,
                           const GemvGate& gate, const float* x, int64_t T, cudaStream_t stream);
Status Int4GemmDevice(const TensorView& w, const float* x, int64_t T, float* y,
                      const W4A16Tile& tile, int cc, cudaStream_t stream);

}  // namespace g4::cuda
