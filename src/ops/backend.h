// The op interface the model is written against. A Backend is a table of op functions filled
// once at start-up for the chosen backend, plus the thread pool they run on. The model calls
// the methods below and never sees SIMD or device code. An attached OpProfiler (ops/profiler.h)
// times every op call by category; without one the methods are a plain indirect call.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "core/thread_pool.h"
#include "ops/attention.h"
#include "ops/elementwise.h"
#include "ops/embed.h"
#include "ops/gelu.h"
#include "ops/graph.h"
#include "ops/kv_write.h"
#include "ops/matmul.h"
#include "ops/matmul_q8a.h"
#include "ops/memory.h"
#include "ops/moe.h"
#include "ops/norm_rope.h"
#include "ops/profiler.h"
#include "ops/residual_norm.h"
#include "ops/rms_norm.h"
#include "ops/rope.h"
#include "ops/softcap.h"

namespace g4 {

namespace cuda {
class DeviceContext;  // kernels/cuda/device_context.h: what a running kCuda backend owns
}  // namespace cuda

enum class BackendKind {
  kRef,  // plain scalar kernels: the oracle, slow
  kCpu,  // Highway SIMD with runtime ISA dispatch, multithreaded
  kCuda,  // NVIDIA GPU (src/kernels/cuda), when g4 is built with G4_CUDA and a device is present
};

const char* BackendName(BackendKind kind);
// "ref" / "cpu" / "cuda" (also in a build without CUDA: Backend then says so); anything else
// is an InvalidArgument naming the accepted values.
StatusOr<BackendKind> ParseBackendKind(const std::string& name);

// How the GGUF matmuls treat the activations. kExact: f32 (MatMul, ops/matmul.h), what the
// golden tests check. kQ8: int8 blocks with integer dot products where MatMulQ8a defines them
// (ops/matmul_q8a.h: decode, prefill and batches against Q4_0 / Q5_0 / Q8_0 / Q4_K / Q6_K),
// llama.cpp's arithmetic; cpu and ref backends.
enum class MatVec { kExact, kQ8 };
const char* MatVecName(MatVec m);  // "exact" | "q8"
// "exact" | "q8"; InvalidArgument naming the accepted values otherwise.
StatusOr<MatVec> ParseMatVec(const std::string& name);

// The ops of a backend's table, listed once: X(field, Name) for each, its signature the type
// Name##Op of its op header (ops/<stem>.h), where it is written once too; every backend declares
// its kernels with that type (`MatMulOp MatMul;`). OpTable's fields come from this list, and so
// do the tables of a backend that defines every op under the op's name (cuda::dev, the CUDA
// tests' host-pointer adapter); the ref and CPU tables are compositions, filled field by field.
#define G4_OPS(X)                                                                          \
  X(matmul, MatMul) X(grouped_matmul, GroupedMatMul) X(rms_norm, RmsNorm) X(rope, Rope)    \
  X(attention, Attention) X(attention_batch, AttentionBatch) X(gelu_mul, GeluMul)          \
  X(softcap, Softcap) X(embed, Embed) X(add, Add) X(scale, Scale) X(kv_write, KvWrite)     \
  X(residual_norm, ResidualNorm) X(norm_rope, NormRope) X(moe, Moe)

// One backend's ops. moe null: the backend does not run MoE layers (Backend::Moe says so).
struct OpTable {
#define G4_OP_FIELD(field, Name) Name##Fn field = nullptr;
  G4_OPS(G4_OP_FIELD)
#undef G4_OP_FIELD
  PackWeightFn pack_weight = nullptr;  // null: weights are used as loaded
};

// The table of one backend. Ops a backend does not implement fall back to the ref kernel (the
// CUDA table: to the CPU kernels). kCuda in a build without CUDA gives the CPU table. The
// pointers the ops take live in that backend's Memory (Backend::memory()): device pointers for
// kCuda, whose table is kernels/cuda's device-resident ops.
const OpTable& GetOpTable(BackendKind kind, MatVec matvec = MatVec::kExact);

class Backend {
 public:
  // threads <= 0: one per hardware thread. The ref backend always runs on one thread.
  // kCuda selects device 0 and its policy (kernels/cuda/policy.h); when that fails (no device or
  // driver, an unsupported card, a build without CUDA) status() says why and the ops are the CPU
  // backend's, so a caller that ignores it gets correct, slow results rather than a crash.
  // Callers check status() (or use Create).
  // matvec kQ8 or kv_dtype kBF16 on kCuda: status() is InvalidArgument. kv_dtype: what the KV
  // caches of this backend's callers store (kv_dtype()); it changes no op.
  Backend(BackendKind kind, int threads, MatVec matvec = MatVec::kExact,
          KvDtype kv_dtype = KvDtype::kF32);
  ~Backend();
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  // The backend, or why it cannot run here (e.g. "--backend cuda: no CUDA device: ...").
  static StatusOr<std::unique_ptr<Backend>> Create(BackendKind kind, int threads,
                                                   MatVec matvec = MatVec::kExact,
                                                   KvDtype kv_dtype = KvDtype::kF32);
  // OK, or why the requested backend is not running (kCuda only).
  const Status& status() const { return status_; }

  BackendKind kind() const { return kind_; }
  MatVec matvec() const { return matvec_; }
  // What callers create KV caches as (SequenceKvCache::Create), and whether the attention op
  // reads a cache stored as t (bf16: the ref and CPU ops; the forward pass refuses otherwise).
  KvDtype kv_dtype() const { return kv_dtype_; }
  bool AttendsKvDtype(KvDtype t) const;
  // How this backend's matmuls want quantized linears repacked at load (LoadOptions), or null.
  PackWeightFn weight_packer() const { return ops_.pack_weight; }
  ThreadPool& pool() { return pool_; }
  // Where the op pointers live: activations and KV caches are allocated here (ops/memory.h).
  // HostMemory() for ref and CPU (and for kCuda when the device is unusable); device memory for
  // a running kCuda backend.
  Memory& memory() const { return memory_; }
  // "backend=cpu isa=AVX2 threads=2 compute=f32 matvec=exact kv=bf16" (or "matvec=q8:vnni512",
  // the integer-dot kernel chosen): the first part of the device policy line.
  // CUDA: "backend=cuda device=NVIDIA_H200 cc=9.0 ... compute=bf16 smem_optin=227KiB
  // gemm_tile=... w4a16_tile=... attn256=... attn512=... activations=device kv=f32 threads=16".
  std::string PolicyString() const;

  // Times every op call into `profiler` while it is enabled; nullptr detaches. The profiler
  // must outlive its attachment.
  void SetProfiler(OpProfiler* profiler) { profiler_ = profiler; }
  OpProfiler* profiler() const { return profiler_; }

  void MatMul(const TensorView& w, const float* x, int64_t T, float* y) {
    if (!Profiling()) return ops_.matmul(pool_, w, x, T, y);
    const auto t0 = OpProfiler::Clock::now();
    ops_.matmul(pool_, w, x, T, y);
    profiler_->Record(profiler_->MatMulCategory(w), t0);
  }
  // Under a profiler each weight is its own MatMul (and a gelu_gate / gelu_up group's GeluMul
  // its own call), so every one is timed in its category; they count as one op.
  void GroupedMatMul(const MatMulGroup& g, const float* x, int64_t T) {
    if (!Profiling()) return ops_.grouped_matmul(pool_, g, x, T);
    profiler_->MergeNextCalls(g.count + (g.gelu_gate || g.gelu_up ? 1 : 0));
    GroupedMatMulParts(
        g, T, [&](const TensorView& w, float* y) { MatMul(w, x, T, y); },
        [&](const float* gate, const float* up, int64_t R, int64_t n, int64_t stride,
            float* out) { GeluMulRows(gate, up, R, n, stride, out); });
  }
  void RmsNorm(const float* x, const TensorView& w, int64_t R, int64_t D, float eps, float* out) {
    Timed(OpProfiler::kNorm, [&] { ops_.rms_norm(pool_, x, w, R, D, eps, out); });
  }
  void Rope(float* x, const int32_t* pos, int64_t T, int64_t H, int64_t D, const float* inv_freq) {
    Timed(OpProfiler::kRope, [&] { ops_.rope(pool_, x, pos, T, H, D, inv_freq); });
  }
  void Attention(const AttentionArgs& args) {
    Timed(OpProfiler::kAttention, [&] { ops_.attention(pool_, args); });
  }
  void AttentionBatch(const AttentionBatchArgs& batch) {
    Timed(OpProfiler::kAttention, [&] { ops_.attention_batch(pool_, batch); });
  }
  void GeluMul(const float* gate, const float* up, int64_t n, float* out) {
    GeluMulRows(gate, up, 1, n, n, out);
  }
  // R rows of n, up's rows up_stride apart (ops/gelu.h).
  void GeluMulRows(const float* gate, const float* up, int64_t R, int64_t n, int64_t up_stride,
                   float* out) {
    Timed(OpProfiler::kElementwise,
          [&] { ops_.gelu_mul(pool_, gate, up, R, n, up_stride, out); });
  }
  // Unimplemented (naming the backend) where the table has no MoE kernel.
  Status Moe(const MoeArgs& args) {
    if (ops_.moe == nullptr) {
      return Unimplemented(std::string("the ") + BackendName(kind_) +
                           " backend does not run mixture-of-experts layers yet (use --backend "
                           "cpu)");
    }
    if (!Profiling()) {
      ops_.moe(pool_, args);
      return Status::Ok();
    }
    const auto t0 = OpProfiler::Clock::now();
    ops_.moe(pool_, args);
    profiler_->Record(OpProfiler::kMoe, t0);
    return Status::Ok();
  }
  void Softcap(float* x, int64_t n, float cap) {
    Timed(OpProfiler::kElementwise, [&] { ops_.softcap(pool_, x, n, cap); });
  }
  void Embed(const TensorView& table, const int32_t* ids, int64_t T, float scale, float* out) {
    Timed(OpProfiler::kEmbed, [&] { ops_.embed(pool_, table, ids, T, scale, out); });
  }
  void Add(const float* a, const float* b, int64_t n, float* out) {
    Timed(OpProfiler::kElementwise, [&] { ops_.add(pool_, a, b, n, out); });
  }
  void Scale(float* x, int64_t n, float s) {
    Timed(OpProfiler::kElementwise, [&] { ops_.scale(pool_, x, n, s); });
  }
  // Under a profiler a projection is its own MatMul, timed in its category; one op.
  void ResidualNorm(const ResidualNormArgs& args) {
    if (!Profiling()) return ops_.residual_norm(pool_, args);
    if (args.proj != nullptr) profiler_->MergeNextCalls(2);
    ResidualNormParts(
        args, [&](const TensorView& w, const float* x, int64_t T, float* y) { MatMul(w, x, T, y); },
        [&](const ResidualNormArgs& n) {
          Timed(OpProfiler::kNorm, [&] { ops_.residual_norm(pool_, n); });
        });
  }
  void NormRope(const NormRopeArgs& args) {
    Timed(OpProfiler::kNorm, [&] { ops_.norm_rope(pool_, args); });
  }
  void KvWrite(const KvWriteArgs& args) {
    Timed(OpProfiler::kElementwise, [&] { ops_.kv_write(pool_, args); });
  }

  // Op graphs (ops/graph.h): whether this backend records them (a running kCuda backend), and
  // the recording. Between BeginCapture and EndCapture the ops this thread issues on this
  // backend are recorded, not run; nothing may be uploaded, downloaded or allocated meanwhile.
  // EndCapture fails (FailedPrecondition, naming the op) when an op could not be recorded (one
  // that runs on the host), and the backend stays usable. Unimplemented on ref and CPU.
  bool can_capture() const;
  Status BeginCapture();
  StatusOr<std::unique_ptr<OpGraph>> EndCapture();

 private:
  bool Profiling() const { return profiler_ != nullptr && profiler_->enabled(); }
  template <typename F>
  void Timed(OpProfiler::Category c, F&& op) {
    if (!Profiling()) return op();
    const auto t0 = OpProfiler::Clock::now();
    op();
    profiler_->Record(c, t0);
  }

  BackendKind kind_;
  MatVec matvec_;
  KvDtype kv_dtype_;
  // kCuda: the device context (its stream, weight cache, error) and its policy line; before
  // status_ (filled by it). The context closes when its last owner ends.
  std::shared_ptr<cuda::DeviceContext> device_;
  std::string device_policy_;
  Status status_;
  const OpTable& ops_;
  Memory& memory_;
  ThreadPool pool_;
  OpProfiler* profiler_ = nullptr;
};

}  // namespace g4
