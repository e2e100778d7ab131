// The CUDA backend's op functions, with exactly the signatures and contracts of ops/*.h, so
// ops/backend.cc puts them in an OpTable like the ref and CPU kernels. No CUDA headers here.
//
// Staging (this first backend): the model calls ops with HOST f32 pointers, so every op
//   - uploads its weights ONCE, on first use, into a device cache keyed by the host pointer
//     (staging.h): float matmul weights are converted to the policy's compute dtype there
//     (bf16 -> f16 on SM 7.x), f32 stays f32, int4 W4A16 rows + scales are uploaded as stored;
//   - copies its activations host -> device, runs the kernel, copies the result back.
// This is correct but slow: every op pays two PCIe copies and a synchronization. The next step
// is device-resident activations and KV cache, with the decode step captured in a CUDA graph
// per batch bucket. Ops the device kernels do not cover (int8 / GGUF-block matmul weights,
// embedding tables larger than a quarter of device memory, e.g. the per-layer-embedding table
// on a 16 GB card) and attention with a head_dim that is not a multiple of 32 (small test
// models) run on the CPU kernels, on the host copies.
//
// A CUDA failure inside an op is recorded once (LastError), logged, and the op's outputs are
// filled with NaN, so a broken device never yields plausible-looking numbers.
#pragma once

#include <string>

#include "core/status.h"
#include "core/thread_pool.h"
#include "kernels/cuda/policy.h"
#include "ops/attention.h"
#include "ops/elementwise.h"
#include "ops/embed.h"
#include "ops/gelu.h"
#include "ops/matmul.h"
#include "ops/rms_norm.h"
#include "ops/rope.h"
#include "ops/softcap.h"

namespace g4::cuda {

// Selects device `ordinal`, chooses its policy (policy.h) and makes it the one the ops use.
// Unavailable without a device or driver; the policy's refusal for an unsupported card.
// Idempotent for the same ordinal. The op functions call Init(0) themselves when nobody did.
StatusOr<DevicePolicy> Init(int ordinal = 0);
// Frees every cached weight and scratch buffer (a Backend's end; tests between cases, since a
// freed host buffer's address may be reused by a different tensor).
void ReleaseDeviceMemory();
// The first CUDA failure seen by an op since Init, or OK.
Status LastError();
// Bytes of weights held in the device cache.
int64_t CachedWeightBytes();

// Whether MatMul runs `w` on the device (float or int4-group weights) or on the CPU kernel.
bool MatMulOnDevice(const TensorView& w);
void MatMul(ThreadPool& pool, const TensorView& w, const float* x, int64_t T, float* y);
void RmsNorm(ThreadPool& pool, const float* x, const TensorView& w, int64_t R, int64_t D, float eps,
             float* out);
void Rope(ThreadPool& pool, float* x, const int32_t* positions, int64_t T, int64_t H, int64_t D,
          const float* inv_freq);
// Whether Attention runs on the device for this head_dim (a multiple of 32 up to 512, the
// kernel's layout, tiles.h) or on the CPU kernel.
bool AttentionOnDevice(int64_t head_dim);
void Attention(ThreadPool& pool, const AttentionArgs& a);
void GeluMul(ThreadPool& pool, const float* gate, const float* up, int64_t n, float* out);
void Softcap(ThreadPool& pool, float* x, int64_t n, float cap);
void Embed(ThreadPool& pool, const TensorView& table, const int32_t* ids, int64_t T, float scale,
           float* out);
// Whether Embed gathers `table` on the device (a float table within a quarter of device
// memory) or on the host (embed.cu). Valid after Init.
bool EmbedOnDevice(const TensorView& table);
void Add(ThreadPool& pool, const float* a, const float* b, int64_t n, float* out);
void Scale(ThreadPool& pool, float* x, int64_t n, float s);

}  // namespace g4::cuda
