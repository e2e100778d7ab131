// The op interface the model is written against. A Backend is a table of op functions filled
// once at start-up for the chosen backend, plus the thread pool they run on. The model calls
// the methods below and never sees SIMD or device code.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "core/thread_pool.h"
#include "ops/attention.h"
#include "ops/elementwise.h"
#include "ops/embed.h"
#include "ops/gelu.h"
#include "ops/matmul.h"
#include "ops/rms_norm.h"
#include "ops/rope.h"
#include "ops/softcap.h"

namespace g4 {

enum class BackendKind {
  kRef,  // plain scalar kernels: the oracle, slow
  kCpu,  // Highway SIMD with runtime ISA dispatch, multithreaded
};

const char* BackendName(BackendKind kind);
// "ref" / "cpu"; anything else is an InvalidArgument naming the accepted values.
StatusOr<BackendKind> ParseBackendKind(const std::string& name);

struct OpTable {
  MatMulFn matmul = nullptr;
  RmsNormFn rms_norm = nullptr;
  RopeFn rope = nullptr;
  AttentionFn attention = nullptr;
  GeluMulFn gelu_mul = nullptr;
  SoftcapFn softcap = nullptr;
  EmbedFn embed = nullptr;
  AddFn add = nullptr;
  ScaleFn scale = nullptr;
};

// The table of one backend. Ops a backend does not implement fall back to the ref kernel.
const OpTable& GetOpTable(BackendKind kind);

class Backend {
 public:
  // threads <= 0: one per hardware thread. The ref backend always runs on one thread.
  Backend(BackendKind kind, int threads);

  BackendKind kind() const { return kind_; }
  ThreadPool& pool() { return pool_; }
  // "backend=cpu isa=AVX2 threads=2 compute=f32": the first part of the device policy line.
  std::string PolicyString() const;

  void MatMul(const TensorView& w, const float* x, int64_t T, float* y) {
    ops_.matmul(pool_, w, x, T, y);
  }
  void RmsNorm(const float* x, const TensorView& w, int64_t R, int64_t D, float eps, float* out) {
    ops_.rms_norm(pool_, x, w, R, D, eps, out);
  }
  void Rope(float* x, const int32_t* pos, int64_t T, int64_t H, int64_t D, const float* inv_freq) {
    ops_.rope(pool_, x, pos, T, H, D, inv_freq);
  }
  void Attention(const AttentionArgs& args) { ops_.attention(pool_, args); }
  void GeluMul(const float* gate, const float* up, int64_t n, float* out) {
    ops_.gelu_mul(pool_, gate, up, n, out);
  }
  void Softcap(float* x, int64_t n, float cap) { ops_.softcap(pool_, x, n, cap); }
  void Embed(const TensorView& table, const int32_t* ids, int64_t T, float scale, float* out) {
    ops_.embed(pool_, table, ids, T, scale, out);
  }
  void Add(const float* a, const float* b, int64_t n, float* out) { ops_.add(pool_, a, b, n, out); }
  void Scale(float* x, int64_t n, float s) { ops_.scale(pool_, x, n, s); }

 private:
  BackendKind kind_;
  const OpTable& ops_;
  ThreadPool pool_;
};

}  // namespace g4
