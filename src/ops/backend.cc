#include "ops/backend.h"

#include "kernels/cpu/kernels.h"
#include "kernels/ref/kernels.h"

namespace g4 {
namespace {

OpTable MakeRefTable() {
  OpTable t;
  t.matmul = ref::MatMul;
  t.rms_norm = ref::RmsNorm;
  t.rope = ref::Rope;
  t.attention = ref::Attention;
  t.gelu_mul = ref::GeluMul;
  t.softcap = ref::Softcap;
  t.embed = ref::Embed;
  t.add = ref::Add;
  t.scale = ref::Scale;
  return t;
}

OpTable MakeCpuTable() {
  OpTable t = MakeRefTable();  // rope stays ref: it is O(T*D), not worth a SIMD kernel
  t.matmul = cpu::MatMul;
  t.rms_norm = cpu::RmsNorm;
  t.attention = cpu::Attention;
  t.gelu_mul = cpu::GeluMul;
  t.softcap = cpu::Softcap;
  t.embed = cpu::Embed;
  t.add = cpu::Add;
  t.scale = cpu::Scale;
  return t;
}

}  // namespace

const char* BackendName(BackendKind kind) {
  switch (kind) {
    case BackendKind::kRef: return "ref";
    case BackendKind::kCpu: return "cpu";
  }
  return "?";
}

StatusOr<BackendKind> ParseBackendKind(const std::string& name) {
  if (name == "ref") return BackendKind::kRef;
  if (name == "cpu") return BackendKind::kCpu;
  return InvalidArgument("unknown backend '" + name + "' (expected: cpu, ref)");
}

const OpTable& GetOpTable(BackendKind kind) {
  static const OpTable ref_table = MakeRefTable();
  static const OpTable cpu_table = MakeCpuTable();
  return kind == BackendKind::kRef ? ref_table : cpu_table;
}

Backend::Backend(BackendKind kind, int threads)
    : kind_(kind), ops_(GetOpTable(kind)), pool_(kind == BackendKind::kRef ? 1 : threads) {}

std::string Backend::PolicyString() const {
  std::string s = std::string("backend=") + BackendName(kind_);
  s += std::string(" isa=") + (kind_ == BackendKind::kRef ? "scalar" : cpu::TargetName());
  s += " threads=" + std::to_string(pool_.size());
  s += " compute=f32";
  return s;
}

}  // namespace g4
