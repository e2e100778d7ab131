// The device-pointer MatMul, GroupedMatMul and Attention of the CUDA backend (kernels.h, cuda::dev)
// around the device kernels of matmul.h, matmul_quant.h and attention.h: weights come from the
// device cache (uploaded once; float weights in the policy's compute dtype), activations are device
// pointers, nothing synchronizes. Weights the device kernels do not define (int8 groups, GGUF
// blocks: e.g. g4's int8-per-row LM head) and attention with a head_dim the device kernel does not
// define (not a multiple of 32: small test models; Gemma 4's 256 and 512 run on the device) run the
// CPU kernel on host copies of the inputs, and the result is uploaded: never while a graph is
// captured (a graph cannot record host work), where the attempt fails the capture instead.
#include <string>

#include "kernels/cpu/kernels.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda/device_context.h"
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/matmul.h"
#include "kernels/cuda/matmul_quant.h"
#include "ops/kv_blocks.h"

namespace g4::cuda {

bool MatMulOnDevice(const TensorView& w) {
  return !w.quantized() || w.quant.kind == QuantKind::kInt4Group;
}

bool AttentionOnDevice(int64_t head_dim) {
  return head_dim > 0 && head_dim % 32 == 0 && head_dim <= kAttentionMaxHeadDim;
}

namespace dev {
namespace {

// y = x @ w^T on the CPU kernel, through host copies of x and y.
void MatMulOnHost(DeviceContext* dc, ThreadPool& pool, const TensorView& w, const float* x,
                  int64_t T, float* y) {
  if (dc->CaptureRefuses("matmul of " + StorageName(w) + " weight " + ShapeToString(w.shape) +
                         " runs on the host")) {
    return;
  }
  const int64_t N = w.dim(0), K = w.dim(1);
  float* hx = HostScratchOf<float>(0, T * K);
  float* hy = HostScratchOf<float>(1, T * N);
  if (!dc->ToHost(hx, x, static_cast<size_t>(T * K) * sizeof(float))) return;
  cpu::MatMul(pool, w, hx, T, hy);
  dc->ToDevice(y, hy, static_cast<size_t>(T * N) * sizeof(float));
}

// Attention on the CPU kernel, through host copies of q, k, v, the positions and out.
void AttentionOnHost(DeviceContext* dc, ThreadPool& pool, const AttentionArgs& a) {
  if (dc->CaptureRefuses("attention with head_dim " + std::to_string(a.head_dim) +
                         " runs on the host")) {
    return;
  }
  AttentionArgs h = a;
  // A paged view (ops/kv_blocks.h) copies its table and the K/V up to its highest block.
  if (a.block_table != nullptr) {
    const int64_t blocks = a.block_size > 0 ? a.S / a.block_size : 0;
    auto* table = HostScratchOf<int32_t>(6, blocks);
    if (!dc->ToHost(table, a.block_table, static_cast<size_t>(blocks) * sizeof(int32_t))) return;
    h.block_table = table;
  }
  const int64_t q_n = a.T * a.n_heads * a.head_dim;
  const int64_t kv_n = KvEntries(h.block_table, a.block_size, a.S) * a.n_kv_heads * a.head_dim;
  float* q = HostScratchOf<float>(0, q_n);
  float* k = HostScratchOf<float>(1, kv_n);
  float* v = HostScratchOf<float>(2, kv_n);
  auto* q_pos = HostScratchOf<int32_t>(3, a.T);
  auto* k_pos = HostScratchOf<int32_t>(4, a.S);
  h.out = HostScratchOf<float>(5, q_n);
  const size_t fq = static_cast<size_t>(q_n) * sizeof(float);
  const size_t fkv = static_cast<size_t>(kv_n) * sizeof(float);
  if (!dc->ToHost(q, a.q, fq) || !dc->ToHost(k, a.k, fkv) || !dc->ToHost(v, a.v, fkv) ||
      !dc->ToHost(q_pos, a.q_pos, static_cast<size_t>(a.T) * sizeof(int32_t)) ||
      !dc->ToHost(k_pos, a.k_pos, static_cast<size_t>(a.S) * sizeof(int32_t))) {
    return;
  }
  h.q = q, h.k = k, h.v = v, h.q_pos = q_pos, h.k_pos = k_pos;
  cpu::Attention(pool, h);
  dc->ToDevice(a.out, h.out, fq);
}

}  // namespace

void MatMul(ThreadPool& pool, const TensorView& w, const float* x, int64_t T, float* y) {
  DeviceContext* dc = ActiveDevice();
  if (T <= 0 || dc == nullptr) return;
  if (!MatMulOnDevice(w)) return MatMulOnHost(dc, pool, w, x, T, y);
  const TensorView* dw = dc->DeviceWeight(w, /*convert_to_compute=*/true);
  if (dw == nullptr) return;
  dc->Ok(w.quantized() ? MatMulInt4Device(*dw, x, T, y, dc->limits(), dc->stream())
                       : MatMulDevice(*dw, x, T, y, dc->limits(), dc->stream()),
         "matmul");
}

void GroupedMatMul(ThreadPool& pool, const MatMulGroup& g, const float* x, int64_t T) {
  DeviceContext* dc = ActiveDevice();
  if (T <= 0 || dc == nullptr) return;
  const TensorView* dw[kMaxMatMulGroup] = {};
  // One weight is worth a group when its epilogue saves the GeluMul launch (gelu_up).
  bool grouped = (g.count > 1 || g.gelu_up != nullptr) && g.count <= kMaxMatMulGroup &&
                 T <= kGemvMaxT;
  for (int i = 0; grouped && i < g.count; ++i) grouped = MatMulOnDevice(*g.w[i]);
  for (int i = 0; grouped && i < g.count; ++i) {
    if ((dw[i] = dc->DeviceWeight(*g.w[i], /*convert_to_compute=*/true)) == nullptr) return;
  }
  if (grouped && GemvGroupable(dw, g.count, T)) {
    GemvGate gate;
    if (g.gelu_gate) gate.kind = GemvGate::kWeight;
    if (g.gelu_up != nullptr) {
      gate.kind = GemvGate::kRows;
      gate.up_rows = g.gelu_up;
      gate.up_stride = g.gelu_up_stride;
    }
    dc->Ok(GroupedGemvDevice(dw, g.y, g.count, gate, x, T, dc->stream()), "matmul");
    return;
  }
  GroupedMatMulParts(
      g, T, [&](const TensorView& w, float* y) { MatMul(pool, w, x, T, y); },
      [&](const float* gate, const float* up, int64_t R, int64_t n, int64_t stride, float* out) {
        GeluMul(pool, gate, up, R, n, stride, out);
      });
}

void Attention(ThreadPool& pool, const AttentionArgs& a) {
  DeviceContext* dc = ActiveDevice();
  if (a.T <= 0 || dc == nullptr) return;
  if (!AttentionOnDevice(a.head_dim)) return AttentionOnHost(dc, pool, a);
  dc->Ok(AttentionDevice(a, dc->limits(), dc->stream(), dc->attention_counters(),
                         DeviceContext::kCounters - 1),
         "attention");
}

void AttentionBatch(ThreadPool& pool, const AttentionBatchArgs& b) {
  DeviceContext* dc = ActiveDevice();
  if (b.count <= 0 || dc == nullptr) return;
  if (!AttentionOnDevice(b.items[0].head_dim)) {
    for (int i = 0; i < b.count; ++i) Attention(pool, b.items[i]);
    return;
  }
  dc->Ok(AttentionBatchDevice(b.items, b.count, dc->limits(), dc->stream(),
                              dc->attention_counters(), DeviceContext::kCounters - 1),
         "attention");
}

}  // namespace dev
}  // namespace g4::cuda
