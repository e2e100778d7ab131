// The CUDA backend's op functions, declared with the signature types of ops/*.h (MatMulOp ...)
// and their contracts, so ops/backend.cc puts them in an OpTable like the ref and CPU kernels.
// No CUDA headers here.
//
// cuda::dev (the kCuda Backend's table): every float / int32 pointer (x, y, out, ids, positions,
// inv_freq, AttentionArgs q/k/v/q_pos/k_pos/out) is DeviceMemory(). The ops run on the open
// device context (device_context.h: a kCuda Backend owns it), launch on its one stream and
// return without synchronizing; a CUDA failure is recorded once (LastError, logged), later ops
// do nothing, and it surfaces at the next DeviceMemory().Download. Ops the device kernels do not
// define (int8 / GGUF-block matmul weights, embedding tables EmbedOnDevice refuses, attention
// with a head_dim that is not a multiple of 32: small test models) copy their device inputs to
// host scratch, run the CPU kernel and upload the result, so they work, slowly. (Host-pointer
// versions of the same ops, for the per-op tests, are tests/kernels/cuda/staged_ops.h.)
// Weights (TensorViews) are HOST tensors: each is uploaded ONCE, on first use, into the
// context's cache keyed by its host pointer: float matmul weights converted to the policy's
// compute dtype there (bf16 -> f16 on SM 7.x), f32 stays f32, int4 W4A16 rows + scales as
// stored.
//
// The weight-cache contract: a weight's host memory must not be freed and reused for another
// tensor while the cache may still hold it. The cache checks dtype, shape and byte size at that
// address, never the bytes (that would cost every op a pass over samples of its weights), so
// call ReleaseDeviceMemory() between a tensor's death and the reuse of its memory. The cache
// dies with its context, when the last Backend (or test fixture) holding it ends, so a model
// must outlive the Backends that ran it; tests release at the end of a case (or iteration) that
// frees its tensors.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "core/status.h"
#include "core/thread_pool.h"
#include "kernels/cuda/policy.h"
#include "ops/attention.h"
#include "ops/elementwise.h"
#include "ops/embed.h"
#include "ops/gelu.h"
#include "ops/graph.h"
#include "ops/kv_write.h"
#include "ops/matmul.h"
#include "ops/moe.h"
#include "ops/norm_rope.h"
#include "ops/residual_norm.h"
#include "ops/rms_norm.h"
#include "ops/rope.h"
#include "ops/softcap.h"

namespace g4 {
// ops/memory.h, not included: it needs C++20 (std::span) and the .cu files are C++17.
class Memory;
}  // namespace g4

namespace g4::cuda {

class DeviceContext;  // device_context.h

// Opens device `ordinal` (its policy chosen from the live device, policy.h) or returns the
// context already open; the ops run on it while anyone holds it. Unavailable without a device
// or driver; the policy's refusal for an unsupported card.
StatusOr<std::shared_ptr<DeviceContext>> OpenDevice(int ordinal = 0);
const DevicePolicy& PolicyOf(const DeviceContext& dc);
// Frees the open context's cached weights and workspace (tests between cases, since a freed
// host buffer's address may be reused by a different tensor: see the contract above).
// DeviceMemory() allocations are their owners' and stay.
void ReleaseDeviceMemory();
// The open context's first CUDA failure, or OK; without an open context, why the last
// OpenDevice failed, or FailedPrecondition.
Status LastError();
// Device memory of the open device: cudaMalloc / cudaFree; Download synchronous, after the ops
// queued before it (returning their failure); Copy (device to device) and uploads of up to
// 1 MiB (through a pinned buffer) queued on the ops' stream, larger uploads synchronous. Alloc
// gives nullptr without an open device or when the device is out of memory (which does not fail
// the device); every other method returns LastError() once the device failed or when none is
// open.
Memory& DeviceMemory();
// Bytes of weights held in the open context's cache.
int64_t CachedWeightBytes();

// Whether MatMul runs `w` on the device (float or int4-group weights) or on the CPU kernel.
bool MatMulOnDevice(const TensorView& w);
// Whether Attention runs on the device for this head_dim (a multiple of 32 up to 512, the
// kernel's layout, tiles.h) or on the CPU kernel.
bool AttentionOnDevice(int64_t head_dim);
// Whether Embed gathers `table` on the device (a float table within a quarter of device
// memory) or on the host (embed.cu). Needs an open device.
bool EmbedOnDevice(const TensorView& table);
// Whether Moe runs on the device (float, int4- or int8-group experts, at most 1024 of them) or
// on the CPU kernel (GGUF-block experts).
bool MoeOnDevice(const MoeArgs& a);

// CUDA graphs (ops/graph.h) of the cuda::dev ops and DeviceMemory().Copy. Every op and copy
// runs on one non-blocking stream; BeginCapture records its work instead of running it
// (cudaStreamBeginCapture, thread-local mode) until EndCapture, which instantiates the graph.
// While capturing, what a graph cannot record is not attempted: host fallbacks (int8 / GGUF
// matmuls, host-gathered embeddings, attention off the device), a weight's first upload (run
// the ops once before capturing), DeviceMemory Alloc / Free / Upload / Download,
// ReleaseDeviceMemory. The first such attempt (or CUDA error) is kept and EndCapture returns
// FailedPrecondition("cannot record a CUDA graph: <it>"); the device stays usable (LastError()
// is not touched). BeginCapture: FailedPrecondition when already capturing,
// the device's error when it failed.
Status BeginCapture();
StatusOr<std::unique_ptr<OpGraph>> EndCapture();
bool Capturing();

// The ops on DeviceMemory() pointers (see the file comment): the kCuda op table.
namespace dev {
MatMulOp MatMul;
// One grouped GEMV launch (matmul.h GemvGroupable: decode rows, weights of one K and storage,
// all on the device); otherwise one MatMul per weight.
GroupedMatMulOp GroupedMatMul;
RmsNormOp RmsNorm;
RopeOp Rope;
AttentionOp Attention;
// The items in one launch (AttentionBatchDevice) when their head_dim runs on the device, else
// one host Attention each.
AttentionBatchOp AttentionBatch;
GeluMulOp GeluMul;
SoftcapOp Softcap;
EmbedOp Embed;
AddOp Add;
ScaleOp Scale;
// KvWrite (ops/kv_write.h) with every pointer in DeviceMemory(): the positions are read on the
// device, so a recorded step writes the slots of the positions it finds at launch.
KvWriteOp KvWrite;
ResidualNormOp ResidualNorm;
NormRopeOp NormRope;
// Moe with logits, x and out in DeviceMemory(): the routing runs on the device too (moe.cu).
MoeOp Moe;
}  // namespace dev

}  // namespace g4::cuda
