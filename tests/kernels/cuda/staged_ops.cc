// The host-pointer versions of the cuda::dev ops (staged_ops.h): each copies its inputs into
// device scratch, runs the dev op on them, waits, and copies the result back; after any CUDA
// failure the outputs are NaN. Aliased host arguments (x == out) stay aliased on the device, so
// the dev ops' in-place paths are the ones run.
#include "kernels/cuda/staged_ops.h"

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cuda/device_context.h"
#include "ops/kv_blocks.h"
#include "ops/memory.h"

namespace g4::cuda::staged {
namespace {

// Whether a device is open and working; the ops below run on it.
bool Ready() { return ActiveDevice() != nullptr; }

// Device scratch buffer `slot` (0..kSlots-1, grow-only, in DeviceMemory()) with room for at
// least `bytes`; nullptr without a device (and while capturing: a capture cannot allocate).
constexpr int kSlots = 8;
void* Scratch(int slot, size_t bytes) {
  static void* buffers[kSlots] = {};
  static size_t sizes[kSlots] = {};
  if (slot < 0 || slot >= kSlots || !Ready()) return nullptr;
  if (bytes == 0) bytes = 1;
  if (sizes[slot] < bytes) {
    DeviceMemory().Free(buffers[slot]);
    buffers[slot] = DeviceMemory().Alloc(bytes);
    sizes[slot] = buffers[slot] != nullptr ? bytes : 0;
  }
  return buffers[slot];
}
float* ScratchF(int slot, int64_t n) {
  return static_cast<float*>(Scratch(slot, static_cast<size_t>(n) * sizeof(float)));
}

bool ToDevice(void* dst, const void* src, size_t bytes) {
  DeviceContext* dc = ActiveDevice();
  return dc != nullptr && dc->ToDevice(dst, src, bytes);
}
bool ToHost(void* dst, const void* src, size_t bytes) {
  DeviceContext* dc = ActiveDevice();
  return dc != nullptr && dc->ToHost(dst, src, bytes);
}
bool Sync(const char* what) {
  DeviceContext* dc = ActiveDevice();
  return dc != nullptr && dc->Sync(what);
}

void FillNaN(float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = std::numeric_limits<float>::quiet_NaN();
}

// Device scratch `slot` holding a copy of host [0, n); nullptr after a failure.
template <typename T>
T* Staged(int slot, const T* host, int64_t n) {
  const size_t bytes = static_cast<size_t>(n) * sizeof(T);
  auto* d = static_cast<T*>(Scratch(slot, bytes));
  if (d == nullptr || !ToDevice(d, host, bytes)) return nullptr;
  return d;
}

// Waits for the op and copies device [0, n) back to `host`: NaN there when `dev` is null (a
// failed staging) or anything failed.
void Finish(const float* dev, float* host, int64_t n, const char* what) {
  if (dev == nullptr || !Sync(what) ||
      !ToHost(host, dev, static_cast<size_t>(n) * sizeof(float))) {
    FillNaN(host, n);
  }
}

void MatMul(ThreadPool& pool, const TensorView& w, const float* x, int64_t T, float* y) {
  if (T <= 0) return;
  const int64_t N = w.dim(0), K = w.dim(1);
  if (!Ready()) return FillNaN(y, T * N);
  float* dx = Staged(0, x, T * K);
  float* dy = dx != nullptr ? ScratchF(1, T * N) : nullptr;
  if (dy != nullptr) dev::MatMul(pool, w, dx, T, dy);
  Finish(dy, y, T * N, "matmul");
}

// Each y comes back (a gelu_gate group's y[1] as the device left it); after a failure all are
// NaN.
void GroupedMatMul(ThreadPool& pool, const MatMulGroup& g, const float* x, int64_t T) {
  if (T <= 0 || g.count <= 0) return;
  const int64_t K = g.w[0]->dim(1);
  MatMulGroup d = g;
  bool staged = Ready();
  const float* dx = staged ? Staged(0, x, T * K) : nullptr;
  staged = dx != nullptr;
  for (int i = 0; staged && i < g.count; ++i) {
    staged = (d.y[i] = ScratchF(1 + i, T * g.w[i]->dim(0))) != nullptr;
  }
  if (staged && g.gelu_up != nullptr) {
    const int64_t up_n = (T - 1) * g.gelu_up_stride + g.w[0]->dim(0);
    staged = (d.gelu_up = Staged(1 + kMaxMatMulGroup, g.gelu_up, up_n)) != nullptr;
  }
  if (staged) dev::GroupedMatMul(pool, d, dx, T);
  for (int i = 0; i < g.count; ++i) {
    Finish(staged ? d.y[i] : nullptr, g.y[i], T * g.w[i]->dim(0), "grouped_matmul");
  }
}

void RmsNorm(ThreadPool& pool, const float* x, const TensorView& w, int64_t R, int64_t D, float eps,
             float* out) {
  if (R <= 0 || D <= 0) return;
  const int64_t n = R * D;
  if (!Ready()) return FillNaN(out, n);
  float* dx = Staged(0, x, n);
  float* dout = dx == nullptr ? nullptr : out == x ? dx : ScratchF(1, n);
  if (dout != nullptr) dev::RmsNorm(pool, dx, w, R, D, eps, dout);
  Finish(dout, out, n, "rms_norm");
}

void Rope(ThreadPool& pool, float* x, const int32_t* positions, int64_t T, int64_t H, int64_t D,
          const float* inv_freq) {
  if (T <= 0 || H <= 0 || D < 2) return;
  const int64_t n = T * H * D;
  if (!Ready()) return FillNaN(x, n);
  float* dx = Staged(0, x, n);
  int32_t* dpos = dx != nullptr ? Staged(1, positions, T) : nullptr;
  float* dfreq = dpos != nullptr ? Staged(2, inv_freq, D / 2) : nullptr;
  if (dfreq != nullptr) dev::Rope(pool, dx, dpos, T, H, D, dfreq);
  Finish(dfreq != nullptr ? dx : nullptr, x, n, "rope");
}

void Attention(ThreadPool& pool, const AttentionArgs& a) {
  if (a.T <= 0) return;
  const int64_t q_n = a.T * a.n_heads * a.head_dim;
  const int64_t kv_n = KvEntries(a.block_table, a.block_size, a.S) * a.n_kv_heads * a.head_dim;
  if (!Ready()) return FillNaN(a.out, q_n);
  AttentionArgs d = a;
  if (a.block_table != nullptr) {
    d.block_table = Staged(6, a.block_table, a.S / a.block_size);
    if (d.block_table == nullptr) return FillNaN(a.out, q_n);
  }
  float* q = Staged(0, a.q, q_n);
  float* k = q != nullptr ? Staged(1, a.k, kv_n) : nullptr;
  float* v = k != nullptr ? Staged(2, a.v, kv_n) : nullptr;
  int32_t* q_pos = v != nullptr ? Staged(3, a.q_pos, a.T) : nullptr;
  int32_t* k_pos = q_pos != nullptr ? Staged(4, a.k_pos, a.S) : nullptr;
  d.out = k_pos != nullptr ? ScratchF(5, q_n) : nullptr;
  d.q = q, d.k = k, d.v = v, d.q_pos = q_pos, d.k_pos = k_pos;
  if (d.out != nullptr) dev::Attention(pool, d);
  Finish(d.out, a.out, q_n, "attention");
}

void GeluMul(ThreadPool& pool, const float* gate, const float* up, int64_t R, int64_t n,
             int64_t up_stride, float* out) {
  if (R <= 0 || n <= 0) return;
  const int64_t total = R * n, up_n = (R - 1) * up_stride + n;
  if (!Ready()) return FillNaN(out, total);
  float* dg = Staged(0, gate, total);
  float* du = dg == nullptr ? nullptr : up == gate ? dg : Staged(1, up, up_n);
  float* dout = du == nullptr ? nullptr : out == gate ? dg : out == up ? du : ScratchF(2, total);
  if (dout != nullptr) dev::GeluMul(pool, dg, du, R, n, up_stride, dout);
  Finish(dout, out, total, "gelu_mul");
}

// Each item staged on its own (the dev op's one launch for them all is not what this tests).
void AttentionBatch(ThreadPool& pool, const AttentionBatchArgs& b) {
  for (int i = 0; i < b.count; ++i) Attention(pool, b.items[i]);
}

void Moe(ThreadPool& pool, const MoeArgs& a) {
  if (a.R <= 0) return;
  const int64_t n = a.R * a.hidden();
  if (!Ready()) return FillNaN(a.out, n);
  MoeArgs d = a;
  d.logits = Staged(0, a.logits, a.R * a.experts());
  d.x = d.logits != nullptr ? Staged(1, a.x, n) : nullptr;
  d.out = d.x != nullptr ? ScratchF(2, n) : nullptr;
  if (d.out != nullptr) dev::Moe(pool, d);
  Finish(d.out, a.out, n, "moe");
}

void Softcap(ThreadPool& pool, float* x, int64_t n, float cap) {
  if (n <= 0) return;
  if (!Ready()) return FillNaN(x, n);
  float* dx = Staged(0, x, n);
  if (dx != nullptr) dev::Softcap(pool, dx, n, cap);
  Finish(dx, x, n, "softcap");
}

void Embed(ThreadPool& pool, const TensorView& table, const int32_t* ids, int64_t T, float scale,
           float* out) {
  if (T <= 0) return;
  const int64_t n = T * table.dim(1);
  if (!Ready()) return FillNaN(out, n);
  int32_t* dids = Staged(0, ids, T);
  float* dout = dids != nullptr ? ScratchF(1, n) : nullptr;
  if (dout != nullptr) dev::Embed(pool, table, dids, T, scale, dout);
  Finish(dout, out, n, "embed");
}

void Add(ThreadPool& pool, const float* a, const float* b, int64_t n, float* out) {
  if (n <= 0) return;
  if (!Ready()) return FillNaN(out, n);
  float* da = Staged(0, a, n);
  float* db = da == nullptr ? nullptr : b == a ? da : Staged(1, b, n);
  float* dout = db == nullptr ? nullptr : out == a ? da : out == b ? db : ScratchF(2, n);
  if (dout != nullptr) dev::Add(pool, da, db, n, dout);
  Finish(dout, out, n, "add");
}

void Scale(ThreadPool& pool, float* x, int64_t n, float s) {
  if (n <= 0) return;
  if (!Ready()) return FillNaN(x, n);
  float* dx = Staged(0, x, n);
  if (dx != nullptr) dev::Scale(pool, dx, n, s);
  Finish(dx, x, n, "scale");
}

void KvWrite(ThreadPool& pool, const KvWriteArgs& a);  // below

// Every part's x comes back; after a failure all are NaN. A KV write runs after, as the staged
// KvWrite (the fused write is tested on device buffers: dev_ops_test.cc).
void NormRope(ThreadPool& pool, const NormRopeArgs& a) {
  if (a.T <= 0 || a.D <= 0 || a.count <= 0) return;
  if (a.kv_count > 0) {
    return NormRopeThenWrites(
        a, [&](const NormRopeArgs& n) { NormRope(pool, n); },
        [&](const KvWriteArgs& w) { KvWrite(pool, w); });
  }
  NormRopeArgs d = a;
  bool staged = Ready();
  for (int p = 0; staged && p < a.count; ++p) {
    staged = (d.parts[p].x = Staged(p, a.parts[p].x, a.T * a.parts[p].H * a.D)) != nullptr;
  }
  if (staged) staged = (d.positions = Staged(kMaxNormRopeParts, a.positions, a.T)) != nullptr;
  if (staged && a.inv_freq != nullptr) {
    staged = (d.inv_freq = Staged(kMaxNormRopeParts + 1, a.inv_freq, a.D / 2)) != nullptr;
  }
  if (staged) dev::NormRope(pool, d);
  for (int p = 0; p < a.count; ++p) {
    Finish(staged ? d.parts[p].x : nullptr, a.parts[p].x, a.T * a.parts[p].H * a.D, "norm_rope");
  }
}

// h and out come back, and x when the op computed it (a projection); after a failure all are
// NaN.
void ResidualNorm(ThreadPool& pool, const ResidualNormArgs& a) {
  if (a.R <= 0 || a.D <= 0) return;
  const int64_t n = a.R * a.D;
  if (!Ready()) {
    FillNaN(a.h, n);
    if (a.out != nullptr) FillNaN(a.out, n);
    if (a.proj != nullptr) FillNaN(a.x, n);
    return;
  }
  ResidualNormArgs d = a;
  d.x = a.proj != nullptr ? ScratchF(0, n) : Staged(0, a.x, n);
  d.h = d.x != nullptr ? Staged(1, a.h, n) : nullptr;
  d.out = d.h != nullptr && a.out != nullptr ? ScratchF(2, n) : nullptr;
  bool staged = d.h != nullptr && (a.out == nullptr || d.out != nullptr);
  if (staged && a.proj != nullptr) {
    staged = (d.proj_in = Staged(3, a.proj_in, a.R * a.proj->dim(1))) != nullptr;
  }
  if (staged) dev::ResidualNorm(pool, d);
  Finish(staged ? d.h : nullptr, a.h, n, "residual_norm");
  if (a.out != nullptr) Finish(staged ? d.out : nullptr, a.out, n, "residual_norm");
  if (a.proj != nullptr) Finish(staged ? d.x : nullptr, a.x, n, "residual_norm");
}

// The caches are uploaded whole (the rows not written keep their contents), written on the
// device and downloaded. After a failure the caches are NaN and the positions INT32_MIN, never
// a plausible cache.
void KvWrite(ThreadPool& pool, const KvWriteArgs& a) {
  if (a.C <= 0) return;
  const int64_t cache = KvEntries(a.block_table, a.block_size, a.capacity) * a.row;
  KvWriteArgs d = a;
  bool ok = Ready();
  if (ok && a.block_table != nullptr) {
    d.block_table = Staged(6, a.block_table, a.capacity / a.block_size);
    ok = d.block_table != nullptr;
  }
  if (ok) {
    d.k = Staged(0, a.k, a.C * a.row);
    d.v = d.k != nullptr ? Staged(1, a.v, a.C * a.row) : nullptr;
    d.pos = d.v != nullptr ? Staged(2, a.pos, a.C) : nullptr;
    d.k_cache = d.pos != nullptr ? Staged(3, a.k_cache, cache) : nullptr;
    d.v_cache = d.k_cache != nullptr ? Staged(4, a.v_cache, cache) : nullptr;
    d.pos_cache = d.v_cache != nullptr ? Staged(5, a.pos_cache, a.capacity) : nullptr;
    ok = d.pos_cache != nullptr;
  }
  if (ok) dev::KvWrite(pool, d);
  const size_t fcache = static_cast<size_t>(cache) * sizeof(float);
  ok = ok && Sync("kv_write") && ToHost(a.k_cache, d.k_cache, fcache) &&
       ToHost(a.v_cache, d.v_cache, fcache) &&
       ToHost(a.pos_cache, d.pos_cache, static_cast<size_t>(a.capacity) * sizeof(int32_t));
  if (!ok) {
    FillNaN(a.k_cache, cache);
    FillNaN(a.v_cache, cache);
    for (int64_t i = 0; i < a.capacity; ++i) a.pos_cache[i] = std::numeric_limits<int32_t>::min();
  }
}

}  // namespace

const OpTable& Ops() {
  static const OpTable table = [] {
    OpTable t;
#define G4_STAGED_OP(field, Name) t.field = Name;
    G4_OPS(G4_STAGED_OP)
#undef G4_STAGED_OP
    return t;
  }();
  return table;
}

std::vector<g4::testing::OpBackend> OpBackends() {
  g4::testing::OpBackend b;
  b.name = "cuda";
  b.ops = &Ops();
  b.device = true;
  auto device = std::make_shared<std::shared_ptr<DeviceContext>>();
  b.open = [device]() -> std::string {
    auto dc = OpenDevice(0);
    if (!dc.ok()) return dc.status().message();
    *device = *dc;
    return "";
  };
  b.close = [device]() -> std::string {
    const Status error = LastError();
    device->reset();
    return error.ok() ? "" : error.ToString();
  };
  b.weight_died = [] { ReleaseDeviceMemory(); };
  return {b};
}

}  // namespace g4::cuda::staged
