// CUDA Moe (ops/moe.h) on device pointers, the routing included, so a recorded decode step never
// waits for the host. Five launches on the ops' stream:
//   1. route:   one warp per row: softmax over the E experts in f32, the top k by repeated warp
//               argmax, their probabilities renormalised over the chosen, times per_expert_scale;
//   2. group:   one block: the R * k (row, choice) slots bucketed by expert and cut into tiles of
//               up to kTileSlots slots of one expert (a tile table in the workspace);
//   3. gate/up: a block per (tile, kCols rows): for the tile's slots s,
//               act[s, i] = gelu_tanh(gate_e[i] . x) * (up_e[i] . x), each weight element read
//               once per tile;
//   4. down:    a block per (tile, kCols rows): y[s, n] = down_e[n] . act[s];
//   5. combine: out[r, n] = sum_j w[r, j] * y[r k + j, n], j in order.
// So a step reads each chosen expert's weights once per tile of slots that chose it: once per
// decode step. The grids are fixed by (R, k, E) (tiles beyond the table exit at once), which a
// graph can record. Every slot's sums run in one fixed order whatever shares its tile, so the
// result is deterministic.
//
// Ties: a warp argmax takes the lowest index among equal probabilities. The host kernels follow
// torch.topk's CPU order instead (MoeRoute), which has no parallel form; torch's CUDA topk has
// its own. Router scores of real inputs do not tie; the tie fixture (hf-moe-ties) is host-only.
//
// Weights: F32 / BF16 / F16 as stored (not converted: one generic load per element) and int4 or
// int8 groups (the W4A16 export's packed stacks). GGUF-block experts run the CPU kernel on host
// copies (refused while capturing), as the other ops' host fallbacks.
#include <cstdint>

#include "kernels/cpu/kernels.h"
#include "kernels/cuda/device_context.h"
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/load.cuh"

namespace g4::cuda {
namespace {

constexpr int kTileSlots = 8;   // slots sharing each weight element a block reads
constexpr int kWarps = 8;
constexpr int kRowsPerWarp = 1;  // 2 made cicc take over 10 minutes per arch
constexpr int kCols = kWarps * kRowsPerWarp;  // output rows per block
constexpr int kChunk = 256;     // K elements of the tile's inputs staged per step
constexpr int kMaxExperts = 1024;

// One [E, N, K] expert stack on the device: rows [row0, row0 + N') of expert e are rows
// e * rows + row0 ... of the stack.
struct Stack {
  const void* data = nullptr;
  ElemType type = ElemType::kF32;
  int bits = 0;                  // 4 or 8: int4 / int8 groups with `scales`; 0: float
  const void* scales = nullptr;  // [E * rows, K / group]
  ElemType scale_type = ElemType::kBF16;
  int64_t group = 0;
  int64_t row_bytes = 0;
  int64_t rows = 0;
  int64_t row0 = 0;
  int64_t K = 0;
};

__device__ __forceinline__ float StackAt(const Stack& w, int64_t row, int64_t k) {
  if (w.bits == 0) return LoadF32(w.type, w.data, row * w.K + k);
  const uint8_t* r = static_cast<const uint8_t*>(w.data) + row * w.row_bytes;
  int q;
  if (w.bits == 4) {
    const uint8_t b = r[k / 2];
    q = ((k & 1) ? (b >> 4) : (b & 0xf)) - 8;
  } else {
    q = static_cast<int8_t>(r[k]);
  }
  const int64_t groups = w.K / w.group;
  return static_cast<float>(q) * LoadF32(w.scale_type, w.scales, row * groups + k / w.group);
}

// The routing tables in the workspace.
struct Tables {
  int32_t* ids;       // [R * k] the chosen experts, descending probability
  float* weights;     // [R * k]
  int32_t* order;     // [R * k] slots bucketed by expert
  int32_t* tile;      // [max_tiles * 3]: expert, first (into order), count; count 0: unused
};

__global__ void RouteKernel(const float* __restrict__ logits, int64_t R, int E, int k,
                            Stack scale, Tables t) {
  GridDependency();
  const int lane = threadIdx.x % 32;
  const int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.x / 32) + threadIdx.x / 32;
  if (r >= R) return;
  const float* l = logits + r * E;
  float m = -INFINITY;
  for (int e = lane; e < E; e += 32) m = fmaxf(m, l[e]);
  for (int off = 16; off > 0; off >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
  float total = 0.0f;
  for (int e = lane; e < E; e += 32) total += expf(l[e] - m);
  for (int off = 16; off > 0; off >>= 1) total += __shfl_xor_sync(0xffffffffu, total, off);
  // Lane `lane` owns experts lane, lane + 32, ...: bit i of `taken` is expert lane + 32 i.
  uint32_t taken = 0;
  float chosen_p[kMaxMoeTopK];
  int chosen_e[kMaxMoeTopK];
  float top_sum = 0.0f;
  for (int j = 0; j < k; ++j) {
    float best = -1.0f;
    int best_e = E;
    for (int e = lane, i = 0; e < E; e += 32, ++i) {
      if (taken & (1u << i)) continue;
      const float p = expf(l[e] - m) / total;
      if (p > best) best = p, best_e = e;  // ascending e: the lowest index of equals
    }
    for (int off = 16; off > 0; off >>= 1) {
      const float ob = __shfl_xor_sync(0xffffffffu, best, off);
      const int oe = __shfl_xor_sync(0xffffffffu, best_e, off);
      if (ob > best || (ob == best && oe < best_e)) best = ob, best_e = oe;
    }
    if (best_e % 32 == lane) taken |= 1u << (best_e / 32);
    chosen_p[j] = best;
    chosen_e[j] = best_e;
    top_sum += best;
  }
  if (lane == 0) {
    for (int j = 0; j < k; ++j) {
      t.ids[r * k + j] = chosen_e[j];
      t.weights[r * k + j] = chosen_p[j] / top_sum * LoadF32(scale.type, scale.data, chosen_e[j]);
    }
  }
}

// One block: counts per expert, offsets, tiles, then the slots scattered into their buckets
// (any order within a bucket: a slot's result does not depend on its tile mates).
__global__ void GroupKernel(int64_t slots, int E, int max_tiles, Tables t) {
  GridDependency();
  __shared__ unsigned count[kMaxExperts];
  __shared__ unsigned first[kMaxExperts];
  for (int e = threadIdx.x; e < E; e += blockDim.x) count[e] = 0;
  __syncthreads();
  for (int64_t s = threadIdx.x; s < slots; s += blockDim.x) atomicAdd(&count[t.ids[s]], 1u);
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned at = 0;
    int tiles = 0;
    for (int e = 0; e < E; ++e) {
      first[e] = at;
      for (unsigned c = 0; c < count[e]; c += kTileSlots, ++tiles) {
        const unsigned left = count[e] - c, most = kTileSlots;
        t.tile[tiles * 3] = e;
        t.tile[tiles * 3 + 1] = static_cast<int32_t>(at + c);
        t.tile[tiles * 3 + 2] = static_cast<int32_t>(left < most ? left : most);
      }
      at += count[e];
      count[e] = 0;  // the scatter's cursor from here on
    }
    for (int i = tiles; i < max_tiles; ++i) t.tile[i * 3 + 2] = 0;
  }
  __syncthreads();
  for (int64_t s = threadIdx.x; s < slots; s += blockDim.x) {
    const int e = t.ids[s];
    t.order[first[e] + atomicAdd(&count[e], 1u)] = static_cast<int32_t>(s);
  }
}

// out[s, n] for the slots s of tile blockIdx.y and rows n of blockIdx.x's kCols: with kGated,
// gelu_tanh(a_e[n] . x) * (b_e[n] . x), else a_e[n] . x. The input of slot s is row
// s / in_div of `in` ([*, K]): the token's row for gate/up (in_div = k), the slot's own for down.
template <bool kGated>
__global__ void ExpertKernel(Stack a, Stack b, const float* __restrict__ in, int in_div,
                             int64_t N, Tables t, float* __restrict__ out) {
  GridDependency();
  const int count = t.tile[blockIdx.y * 3 + 2];
  if (count == 0) return;
  const int e = t.tile[blockIdx.y * 3], first = t.tile[blockIdx.y * 3 + 1];
  __shared__ float xs[kTileSlots][kChunk];
  __shared__ int32_t slot[kTileSlots];
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  if (tid < kTileSlots) slot[tid] = tid < count ? t.order[first + tid] : -1;
  const int64_t K = a.K;
  constexpr int kAccs = kGated ? 2 : 1;
  float acc[kRowsPerWarp][kAccs][kTileSlots] = {};
  for (int64_t kc = 0; kc < K; kc += kChunk) {
    __syncthreads();  // slot[] written / the previous chunk consumed
    for (int idx = tid; idx < kTileSlots * kChunk; idx += kWarps * 32) {
      const int i = idx / kChunk, kk = idx % kChunk;
      const int64_t kx = kc + kk;
      xs[i][kk] = (i < count && kx < K) ? in[(slot[i] / in_div) * K + kx] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int w = 0; w < kRowsPerWarp; ++w) {
      const int64_t n = static_cast<int64_t>(blockIdx.x) * kCols + warp * kRowsPerWarp + w;
      if (n >= N) continue;
      const int64_t ra = e * a.rows + a.row0 + n, rb = e * b.rows + b.row0 + n;
      for (int kk = lane; kk < kChunk && kc + kk < K; kk += 32) {
        const float wa = StackAt(a, ra, kc + kk);
        const float wb = kGated ? StackAt(b, rb, kc + kk) : 0.0f;
#pragma unroll
        for (int i = 0; i < kTileSlots; ++i) {
          acc[w][0][i] += wa * xs[i][kk];
          if constexpr (kGated) acc[w][kAccs - 1][i] += wb * xs[i][kk];
        }
      }
    }
  }
#pragma unroll
  for (int w = 0; w < kRowsPerWarp; ++w) {
    const int64_t n = static_cast<int64_t>(blockIdx.x) * kCols + warp * kRowsPerWarp + w;
#pragma unroll
    for (int i = 0; i < kTileSlots; ++i) {
      float v[kAccs];
#pragma unroll
      for (int c = 0; c < kAccs; ++c) {
        v[c] = acc[w][c][i];
        for (int off = 16; off > 0; off >>= 1) v[c] += __shfl_xor_sync(0xffffffffu, v[c], off);
      }
      if (lane == 0 && i < count && n < N) {
        out[static_cast<int64_t>(slot[i]) * N + n] =
            kGated ? GeluTanhF32(v[0]) * v[kAccs - 1] : v[0];
      }
    }
  }
}

__global__ void CombineKernel(const float* __restrict__ y, Tables t, int64_t R, int k, int64_t H,
                              float* __restrict__ out) {
  GridDependency();
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < R * H;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / H, n = i - r * H;
    float sum = 0.0f;
    for (int j = 0; j < k; ++j) sum += t.weights[r * k + j] * y[(r * k + j) * H + n];
    out[i] = sum;
  }
}

ElemType ElemOf(DType d) {
  return d == DType::kF32 ? ElemType::kF32 : d == DType::kBF16 ? ElemType::kBF16 : ElemType::kF16;
}

// The device copy of an [E, N, K] stack (or a [E] vector) as a Stack; false on failure.
bool StackOf(DeviceContext* dc, const TensorView& host, int64_t row0, Stack* s) {
  const TensorView* d = dc->DeviceWeight(host, /*convert_to_compute=*/false);
  if (d == nullptr) return false;
  s->data = d->data;
  s->type = ElemOf(d->dtype);
  s->K = host.shape.back();
  s->rows = host.shape.size() == 3 ? host.dim(1) : 1;
  s->row0 = row0;
  if (d->quantized()) {
    s->bits = d->quant.kind == QuantKind::kInt4Group ? 4 : 8;
    s->scales = d->quant.scales;
    s->scale_type = ElemOf(d->quant.scale_dtype);
    s->group = d->quant.group_size;
    s->row_bytes = d->quant.row_bytes;
  }
  return true;
}

// The CPU kernel on host copies of logits and x; out uploaded.
void MoeOnHost(DeviceContext* dc, ThreadPool& pool, const MoeArgs& a) {
  if (dc->CaptureRefuses("moe with " + StorageName(*a.gate_up) + " experts runs on the host")) {
    return;
  }
  const int64_t E = a.experts(), H = a.hidden();
  MoeArgs h = a;
  float* logits = HostScratchOf<float>(0, a.R * E);
  float* x = HostScratchOf<float>(1, a.R * H);
  h.out = HostScratchOf<float>(2, a.R * H);
  if (!dc->ToHost(logits, a.logits, static_cast<size_t>(a.R * E) * sizeof(float)) ||
      !dc->ToHost(x, a.x, static_cast<size_t>(a.R * H) * sizeof(float))) {
    return;
  }
  h.logits = logits, h.x = x;
  cpu::Moe(pool, h);
  dc->ToDevice(a.out, h.out, static_cast<size_t>(a.R * H) * sizeof(float));
}

}  // namespace

bool MoeOnDevice(const MoeArgs& a) {
  for (const TensorView* w : {a.gate_up, a.up, a.down}) {
    if (w != nullptr && w->quantized() && w->quant.kind != QuantKind::kInt4Group &&
        w->quant.kind != QuantKind::kInt8Group) {
      return false;
    }
  }
  return a.experts() <= kMaxExperts && !a.per_expert_scale->quantized();
}

namespace dev {

void Moe(ThreadPool& pool, const MoeArgs& a) {
  DeviceContext* dc = ActiveDevice();
  if (a.R <= 0 || dc == nullptr) return;
  if (!MoeOnDevice(a)) return MoeOnHost(dc, pool, a);
  const int64_t E = a.experts(), H = a.hidden(), I = a.width(), R = a.R, slots = R * a.top_k;
  const int k = a.top_k;
  Stack gate, up, down, scale;
  if (!StackOf(dc, *a.gate_up, 0, &gate) ||
      !StackOf(dc, a.up ? *a.up : *a.gate_up, a.up ? 0 : I, &up) ||
      !StackOf(dc, *a.down, 0, &down) || !StackOf(dc, *a.per_expert_scale, 0, &scale)) {
    return;
  }
  const int max_tiles = static_cast<int>(slots / kTileSlots + E + 1);
  // Workspace: ids, weights, order [slots]; tiles [max_tiles * 3]; act [slots, I]; y [slots, H].
  const size_t ints = static_cast<size_t>(2 * slots + 3 * max_tiles);
  const size_t floats = static_cast<size_t>(slots + slots * I + slots * H);
  auto* ws = static_cast<uint8_t*>(dc->Workspace((ints + floats) * 4));
  if (ws == nullptr) return;
  Tables t;
  t.ids = reinterpret_cast<int32_t*>(ws);
  t.order = t.ids + slots;
  t.tile = t.order + slots;
  t.weights = reinterpret_cast<float*>(t.tile + 3 * max_tiles);
  float* act = t.weights + slots;
  float* y = act + slots * I;
  const cudaStream_t st = dc->stream();
  LaunchKernel(RouteKernel, GridFor(R, 8), 256, 0, st, a.logits, R, static_cast<int>(E), k, scale,
               t);
  LaunchKernel(GroupKernel, 1, 256, 0, st, slots, static_cast<int>(E), max_tiles, t);
  const dim3 gu_grid(static_cast<unsigned>((I + kCols - 1) / kCols),
                     static_cast<unsigned>(max_tiles));
  LaunchKernel(ExpertKernel<true>, gu_grid, kWarps * 32, 0, st, gate, up, a.x, k, I, t, act);
  const dim3 dn_grid(static_cast<unsigned>((H + kCols - 1) / kCols),
                     static_cast<unsigned>(max_tiles));
  LaunchKernel(ExpertKernel<false>, dn_grid, kWarps * 32, 0, st, down, down,
               static_cast<const float*>(act), 1, H, t, y);
  LaunchKernel(CombineKernel, GridFor(R * H, 256), 256, 0, st, static_cast<const float*>(y), t, R,
               k, H, a.out);
  dc->Launched("moe");
}

}  // namespace dev
}  // namespace g4::cuda
