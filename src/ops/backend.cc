#include "ops/backend.h"

#include "kernels/cpu/kernels.h"
#include "kernels/ref/kernels.h"
#ifdef G4_HAS_CUDA
#include "kernels/cuda/kernels.h"
#endif

namespace g4 {
namespace {

// GroupedMatMul as one MatMul per weight (then GeluMul for a gelu_gate or gelu_up group): the
// ref and CPU kernels gain nothing from one call.
template <MatMulFn kMatMul, GeluMulFn kGeluMul>
void MatMulEach(ThreadPool& pool, const MatMulGroup& g, const float* x, int64_t T) {
  GroupedMatMulParts(
      g, T, [&](const TensorView& w, float* y) { kMatMul(pool, w, x, T, y); },
      [&](const float* gate, const float* up, int64_t R, int64_t n, int64_t stride, float* out) {
        kGeluMul(pool, gate, up, R, n, stride, out);
      });
}

OpTable MakeRefTable() {
  OpTable t;
  t.matmul = ref::MatMul;
  t.grouped_matmul = MatMulEach<ref::MatMul, ref::GeluMul>;
  t.rms_norm = ref::RmsNorm;
  t.rope = ref::Rope;
  t.attention = ref::Attention;
  t.attention_batch = AttentionEach<ref::Attention>;
  t.gelu_mul = ref::GeluMul;
  t.softcap = ref::Softcap;
  t.embed = ref::Embed;
  t.add = ref::Add;
  t.scale = ref::Scale;
  t.kv_write = ref::KvWrite;
  t.residual_norm = ref::ResidualNorm;
  t.norm_rope = ref::NormRope;
  t.moe = ref::Moe;
  return t;
}

// The CPU's NormRope: per part the SIMD RmsNorm, then the CPU Rope, then the KV write (the CPU
// table's, a plain copy).
void CpuNormRope(ThreadPool& pool, const NormRopeArgs& a) {
  NormRopeEach(
      a,
      [&](float* x, const TensorView& w, int64_t R) {
        cpu::RmsNorm(pool, x, w, R, a.D, a.eps, x);
      },
      [&](float* x, int64_t H) { cpu::Rope(pool, x, a.positions, a.T, H, a.D, a.inv_freq); },
      [&](const KvWriteArgs& kv) { ref::KvWrite(pool, kv); });
}

// A ResidualNorm whose projection (if any) runs on kMatMul, then kNorm without it: the CPU's
// (cpu::MatMul, the SIMD kernel), and either backend's with int8 activations.
template <MatMulFn kMatMul, ResidualNormFn kNorm>
void ResidualNormOn(ThreadPool& pool, const ResidualNormArgs& a) {
  ResidualNormParts(
      a, [&](const TensorView& w, const float* x, int64_t T, float* y) {
        kMatMul(pool, w, x, T, y);
      },
      [&](const ResidualNormArgs& n) { kNorm(pool, n); });
}

OpTable MakeCpuTable() {
  OpTable t = MakeRefTable();
  t.matmul = cpu::MatMul;
  t.rope = cpu::Rope;
  t.grouped_matmul = MatMulEach<cpu::MatMul, cpu::GeluMul>;
  t.rms_norm = cpu::RmsNorm;
  t.attention = cpu::Attention;
  t.attention_batch = AttentionEach<cpu::Attention>;
  t.gelu_mul = cpu::GeluMul;
  t.softcap = cpu::Softcap;
  t.embed = cpu::Embed;
  t.add = cpu::Add;
  t.scale = cpu::Scale;
  t.residual_norm = ResidualNormOn<cpu::MatMul, cpu::ResidualNorm>;
  t.norm_rope = CpuNormRope;
  t.moe = cpu::Moe;
  return t;
}

// Table t with every matmul through kMatMul: grouped ones, and ResidualNorm's projection.
template <MatMulFn kMatMul, GeluMulFn kGeluMul, ResidualNormFn kNorm>
OpTable WithMatMul(OpTable t) {
  t.matmul = kMatMul;
  t.grouped_matmul = MatMulEach<kMatMul, kGeluMul>;
  t.residual_norm = ResidualNormOn<kMatMul, kNorm>;
  return t;
}

#ifdef G4_HAS_CUDA
// Every op on device pointers (kernels/cuda/kernels.h, cuda::dev); those op functions send
// what the device kernels do not define (int8 / GGUF-block weights, oversized embedding tables)
// to the CPU kernels through host copies.
OpTable MakeCudaTable() {
  OpTable t;
#define G4_CUDA_OP(field, Name) t.field = cuda::dev::Name;
  G4_OPS(G4_CUDA_OP)
#undef G4_CUDA_OP
  return t;
}
#endif

// kCuda: opens the device into *device and its policy line into *policy; the reason when the
// backend cannot run.
Status InitDevice(BackendKind kind, MatVec matvec, KvDtype kv_dtype,
                  std::shared_ptr<cuda::DeviceContext>* device, std::string* policy) {
  if (kind != BackendKind::kCuda) return Status();
  if (matvec != MatVec::kExact) {
    return InvalidArgument(std::string("--matvec ") + MatVecName(matvec) +
                           ": int8 activations run on the cpu and ref backends only");
  }
  if (kv_dtype != KvDtype::kF32) {
    return InvalidArgument(std::string("--kv-dtype ") + KvDtypeName(kv_dtype) +
                           ": the CUDA attention reads f32 K/V only (bf16 and q8 K/V run on the "
                           "cpu and ref backends)");
  }
#ifdef G4_HAS_CUDA
  auto dc = cuda::OpenDevice(0);
  if (!dc.ok()) return Unavailable("--backend cuda: " + dc.status().message());
  *device = std::move(*dc);
  *policy = cuda::PolicyOf(**device).ToString();
  return Status();
#else
  (void)device;
  (void)policy;
  return Unavailable("--backend cuda: g4 was built without CUDA (configure with -DG4_CUDA=ON "
                     "and nvcc in /usr/local/cuda/bin)");
#endif
}

#ifdef G4_HAS_CUDA
// The device memory behind every kCuda backend, with freed blocks kept for reuse (a decode step
// allocates the same buffers each time; cudaFree would synchronize the device). Never destroyed:
// buffers may outlive a Backend.
CachingMemory& CudaMemory() {
  static CachingMemory* memory = new CachingMemory(cuda::DeviceMemory());
  return *memory;
}
#endif

Memory& MemoryFor(BackendKind kind, const Status& status) {
#ifdef G4_HAS_CUDA
  if (kind == BackendKind::kCuda && status.ok()) return CudaMemory();
#endif
  (void)kind;
  (void)status;
  return HostMemory();
}

}  // namespace

const char* BackendName(BackendKind kind) {
  switch (kind) {
    case BackendKind::kRef: return "ref";
    case BackendKind::kCpu: return "cpu";
    case BackendKind::kCuda: return "cuda";
  }
  return "?";
}

StatusOr<BackendKind> ParseBackendKind(const std::string& name) {
  if (name == "ref") return BackendKind::kRef;
  if (name == "cpu") return BackendKind::kCpu;
  if (name == "cuda") return BackendKind::kCuda;
  return InvalidArgument("unknown backend '" + name + "' (expected: cpu, cuda, ref)");
}

const char* MatVecName(MatVec m) { return m == MatVec::kQ8 ? "q8" : "exact"; }

StatusOr<MatVec> ParseMatVec(const std::string& name) {
  if (name == "exact") return MatVec::kExact;
  if (name == "q8") return MatVec::kQ8;
  return InvalidArgument("unknown --matvec '" + name + "' (expected: exact, q8)");
}

const OpTable& GetOpTable(BackendKind kind, MatVec matvec) {
  static const OpTable ref_table = MakeRefTable();
  static const OpTable cpu_table = MakeCpuTable();
  // MatVec::kQ8: every matmul through MatMulQ8a (ops/matmul_q8a.h).
  static const OpTable ref_q8_table =
      WithMatMul<ref::MatMulQ8a, ref::GeluMul, ref::ResidualNorm>(MakeRefTable());
  static const OpTable cpu_q8_table = [] {
    OpTable t = WithMatMul<cpu::MatMulQ8a, cpu::GeluMul, cpu::ResidualNorm>(MakeCpuTable());
    t.pack_weight = cpu::PackQ8aWeight;
    t.moe = cpu::MoeQ8a;  // the experts' matmuls too (the ref table's Moe stays in f64)
    return t;
  }();
#ifdef G4_HAS_CUDA
  static const OpTable cuda_table = MakeCudaTable();
  if (kind == BackendKind::kCuda) return cuda_table;
#endif
  const bool q8 = matvec == MatVec::kQ8;
  if (kind == BackendKind::kRef) return q8 ? ref_q8_table : ref_table;
  return q8 ? cpu_q8_table : cpu_table;
}

Backend::Backend(BackendKind kind, int threads, MatVec matvec, KvDtype kv_dtype)
    : kind_(kind),
      matvec_(matvec),
      kv_dtype_(kv_dtype),
      status_(InitDevice(kind, matvec, kv_dtype, &device_, &device_policy_)),
      ops_(GetOpTable(status_.ok() ? kind : BackendKind::kCpu, matvec)),
      memory_(MemoryFor(kind, status_)),
      pool_(kind == BackendKind::kRef ? 1 : threads) {}

Backend::~Backend() {
#ifdef G4_HAS_CUDA
  // The device weight cache is keyed by host pointers, which die with the model: released
  // even when another backend keeps the context open (its weights upload again).
  if (device_ != nullptr) {
    CudaMemory().ReleaseCached();
    cuda::ReleaseDeviceMemory();
    device_.reset();
  }
#endif
}

StatusOr<std::unique_ptr<Backend>> Backend::Create(BackendKind kind, int threads,
                                                   MatVec matvec, KvDtype kv_dtype) {
  auto b = std::make_unique<Backend>(kind, threads, matvec, kv_dtype);
  if (!b->status().ok()) return b->status();
  return b;
}

bool Backend::AttendsKvDtype(KvDtype t) const {
  return t == KvDtype::kF32 || !(kind_ == BackendKind::kCuda && status_.ok());
}

bool Backend::can_capture() const {
#ifdef G4_HAS_CUDA
  return kind_ == BackendKind::kCuda && status_.ok();
#else
  return false;
#endif
}

Status Backend::BeginCapture() {
#ifdef G4_HAS_CUDA
  if (can_capture()) return cuda::BeginCapture();
#endif
  return Unimplemented(std::string("backend=") + BackendName(kind_) + " records no op graphs");
}

StatusOr<std::unique_ptr<OpGraph>> Backend::EndCapture() {
#ifdef G4_HAS_CUDA
  if (can_capture()) return cuda::EndCapture();
#endif
  return Unimplemented(std::string("backend=") + BackendName(kind_) + " records no op graphs");
}

std::string Backend::PolicyString() const {
  std::string s = std::string("backend=") + BackendName(status_.ok() ? kind_ : BackendKind::kCpu);
  if (kind_ == BackendKind::kCuda && status_.ok()) {
    // The weights are uploaded on first use; activations and KV caches live on the device.
    return s + " " + device_policy_ + " activations=device kv=f32 threads=" +
           std::to_string(pool_.size());
  }
  s += std::string(" isa=") + (kind_ == BackendKind::kRef ? "scalar" : cpu::TargetName());
  s += " threads=" + std::to_string(pool_.size());
  s += " compute=f32";
  s += std::string(" matvec=") + MatVecName(matvec_);
  if (matvec_ == MatVec::kQ8) {  // the integer-dot kernel: the ref backend's is plain C++
    s += std::string(":") + (kind_ == BackendKind::kRef ? "scalar" : cpu::MatMulQ8aKernel());
  }
  s += std::string(" kv=") + KvDtypeName(kv_dtype_);
  return s;
}

}  // namespace g4
