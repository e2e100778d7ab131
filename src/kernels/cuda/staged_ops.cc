// The host-pointer MatMul and Attention of the CUDA backend (kernels.h): the staging around the
// device kernels of matmul.h, matmul_quant.h and attention.h. Weights come from the device cache
// (uploaded once; float weights in the policy's compute dtype), activations are copied in and
// the result copied back. Weights the device kernels do not define (int8 groups, GGUF blocks:
// e.g. g4's int8-per-row LM head) run on the CPU kernel, on the host copy; so does attention
// with a head_dim the device kernel does not define (not a multiple of 32: small test models;
// Gemma 4's 256 and 512 run on the device).
#include "kernels/cpu/kernels.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/matmul.h"
#include "kernels/cuda/matmul_quant.h"
#include "kernels/cuda/staging.h"

namespace g4::cuda {

bool MatMulOnDevice(const TensorView& w) {
  return !w.quantized() || w.quant.kind == QuantKind::kInt4Group;
}

void MatMul(ThreadPool& pool, const TensorView& w, const float* x, int64_t T, float* y) {
  using namespace staging;
  const int64_t N = w.dim(0), K = w.dim(1);
  if (T <= 0) return;
  if (!Ready()) return FillNaN(y, T * N);
  if (!MatMulOnDevice(w)) return cpu::MatMul(pool, w, x, T, y);
  const TensorView* dw = DeviceWeight(w, /*convert_to_compute=*/true);
  float* dx = ScratchF(0, T * K);
  float* dy = ScratchF(1, T * N);
  if (dw == nullptr || dx == nullptr || dy == nullptr ||
      !ToDevice(dx, x, static_cast<size_t>(T * K) * sizeof(float))) {
    return FillNaN(y, T * N);
  }
  const Status s = w.quantized() ? MatMulInt4Device(*dw, dx, T, dy, Limits(), Stream())
                                 : MatMulDevice(*dw, dx, T, dy, Limits(), Stream());
  if (!Ok(s, "matmul") || !Sync("matmul") ||
      !ToHost(y, dy, static_cast<size_t>(T * N) * sizeof(float))) {
    FillNaN(y, T * N);
  }
}

bool AttentionOnDevice(int64_t head_dim) {
  return head_dim > 0 && head_dim % 32 == 0 && head_dim <= kAttentionMaxHeadDim;
}

void Attention(ThreadPool& pool, const AttentionArgs& a) {
  using namespace staging;
  const int64_t q_n = a.T * a.n_heads * a.head_dim, kv_n = a.S * a.n_kv_heads * a.head_dim;
  if (a.T <= 0) return;
  if (!Ready()) return FillNaN(a.out, q_n);
  if (!AttentionOnDevice(a.head_dim)) return cpu::Attention(pool, a);
  AttentionArgs d = a;
  d.q = ScratchF(0, q_n);
  d.k = ScratchF(1, kv_n);
  d.v = ScratchF(2, kv_n);
  auto* q_pos = static_cast<int32_t*>(Scratch(3, static_cast<size_t>(a.T) * sizeof(int32_t)));
  auto* k_pos = static_cast<int32_t*>(Scratch(4, static_cast<size_t>(a.S) * sizeof(int32_t)));
  d.out = ScratchF(5, q_n);
  d.q_pos = q_pos;
  d.k_pos = k_pos;
  const size_t fq = static_cast<size_t>(q_n) * sizeof(float);
  const size_t fkv = static_cast<size_t>(kv_n) * sizeof(float);
  if (d.q == nullptr || d.k == nullptr || d.v == nullptr || q_pos == nullptr ||
      k_pos == nullptr || d.out == nullptr || !ToDevice(const_cast<float*>(d.q), a.q, fq) ||
      !ToDevice(const_cast<float*>(d.k), a.k, fkv) ||
      !ToDevice(const_cast<float*>(d.v), a.v, fkv) ||
      !ToDevice(q_pos, a.q_pos, static_cast<size_t>(a.T) * sizeof(int32_t)) ||
      !ToDevice(k_pos, a.k_pos, static_cast<size_t>(a.S) * sizeof(int32_t))) {
    return FillNaN(a.out, q_n);
  }
  if (!Ok(AttentionDevice(d, Limits(), Stream()), "attention") || !Sync("attention") ||
      !ToHost(a.out, d.out, fq)) {
    FillNaN(a.out, q_n);
  }
}

}  // namespace g4::cuda
