// Attention kernels (attention.h). Layout of one block (AttentionPlan, tiles.h): `warps` warps,
// each owning `rows_per_warp` query rows; lane l holds head-dim elements l, l + 32, ... of each
// row's q and output accumulator in registers, so shared-memory reads of a K/V row by a warp are
// conflict-free. Scores of the current key tile go to a per-row shared buffer (written by lane 0
// after the warp reduction, read by all lanes after __syncwarp). A key tile no query row of the
// block can see (empty slots of a fixed-capacity view, k_pos -1; keys outside every row's
// window) is neither loaded nor scored: the block decides with __syncthreads_or.
#include "kernels/cuda/attention.h"

#include <cmath>
#include <string>

#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/load.cuh"
#include "ops/kv_blocks.h"

namespace g4::cuda {
namespace {

struct AttnParams {
  const float* q;
  const float* k;
  const float* v;
  const int32_t* q_pos;
  const int32_t* k_pos;
  const int32_t* block_table;  // [S / block_size] or null: slot s's K/V at KvEntry(s)
  int32_t block_size;
  int64_t T, S, n_heads, n_kv, hd, group, rows_total;
  int32_t window;
  float scale;
  float* out;
  int bc;
  int64_t chunk;     // keys per split (a multiple of bc)
  int splits;        // 1: write `out`; > 1: write the partial states below
  float* part_m;     // [splits, n_kv * rows_total] running max (-inf: saw nothing)
  float* part_l;     // [splits, n_kv * rows_total] softmax denominator
  float* part_acc;   // [splits, n_kv * rows_total, hd] unnormalized output
  // [n_kv, row_tiles], zero between launches: with splits > 1 the last split of a tile to
  // finish merges its rows (CombineRow) and resets its counter; nullptr: AttnCombineKernel
  // merges.
  unsigned* counters;
  int64_t row_tiles;  // query tiles of rows_total
};

// One launch's items (ops/attention.h AttentionBatchArgs), passed by value: blocks (x, y, z) =
// (query tile, item * n_kv + KV head, key split), the grid spanning the largest item; a block
// outside its item's tiles or splits exits.
struct AttnBatch {
  AttnParams item[kMaxAttentionBatch];
  int64_t n_kv;  // every item's
};

// Merges the key splits of row gi (kv head * rows_total + row) in one warp: out = sum_s acc_s
// e^(m_s - M) / sum_s l_s e^(m_s - M) with M the largest m_s over splits that saw a key; zeros
// when none did. The partial states are read through L2 (__ldcg): other blocks wrote them.
__device__ __forceinline__ void CombineRow(const AttnParams& p, int64_t gi, int lane) {
  const int64_t rows = p.n_kv * p.rows_total;
  const int64_t kvh = gi / p.rows_total, row = gi % p.rows_total;
  const int64_t t = row / p.group, h = kvh * p.group + row % p.group;
  float M = -INFINITY;
  for (int s = 0; s < p.splits; ++s) {
    if (__ldcg(p.part_l + s * rows + gi) > 0.0f) M = fmaxf(M, __ldcg(p.part_m + s * rows + gi));
  }
  float L = 0.0f;
  if (M != -INFINITY) {
    for (int s = 0; s < p.splits; ++s) {
      const float ls = __ldcg(p.part_l + s * rows + gi);
      if (ls > 0.0f) L += ls * expf(__ldcg(p.part_m + s * rows + gi) - M);
    }
  }
  float* o = p.out + (t * p.n_heads + h) * p.hd;
  for (int64_t d = lane; d < p.hd; d += 32) {
    float v = 0.0f;
    if (L > 0.0f) {
      for (int s = 0; s < p.splits; ++s) {
        const float ls = __ldcg(p.part_l + s * rows + gi);
        if (ls > 0.0f) {
          v += __ldcg(p.part_acc + (s * rows + gi) * p.hd + d) *
               expf(__ldcg(p.part_m + s * rows + gi) - M);
        }
      }
      v /= L;
    }
    o[d] = v;
  }
}

// kPerLane: head_dim / 32 upper bound (registers are indexed statically; lanes skip i >= hd/32).
template <int kPerLane, int kRows>
__global__ void __launch_bounds__(kAttentionWarps * 32) AttnKernel(const AttnBatch batch) {
  GridDependency();
  const AttnParams& p = batch.item[blockIdx.y / batch.n_kv];
  if (blockIdx.x >= p.row_tiles || blockIdx.z >= p.splits) return;  // block-uniform
  extern __shared__ __align__(16) float smem[];
  const int hd = static_cast<int>(p.hd), per_lane = hd / 32, bc = p.bc;
  float* ks = smem;              // [bc, hd]
  float* vs = ks + bc * hd;      // [bc, hd]
  float* scores = vs + bc * hd;  // [warps * kRows, bc]
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int64_t kvh = blockIdx.y % batch.n_kv;
  const int split = static_cast<int>(blockIdx.z);
  const int64_t row0 = (static_cast<int64_t>(blockIdx.x) * kAttentionWarps + warp) * kRows;

  float qr[kRows][kPerLane], acc[kRows][kPerLane], m[kRows], l[kRows];
  int32_t qp[kRows];
  int64_t t_of[kRows], h_of[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const int64_t row = row0 + r;
    const bool valid = row < p.rows_total;
    t_of[r] = valid ? row / p.group : 0;
    h_of[r] = kvh * p.group + (valid ? row % p.group : 0);
    qp[r] = valid ? p.q_pos[t_of[r]] : 0;
    m[r] = -INFINITY;
    l[r] = 0.0f;
    const float* qrow = p.q + (t_of[r] * p.n_heads + h_of[r]) * p.hd;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      qr[r][i] = (valid && i < per_lane) ? qrow[lane + 32 * i] : 0.0f;
      acc[r][i] = 0.0f;
    }
  }

  const int64_t s_begin = static_cast<int64_t>(split) * p.chunk;
  const int64_t s_end = s_begin + p.chunk < p.S ? s_begin + p.chunk : p.S;
  for (int64_t s0 = s_begin; s0 < s_end; s0 += bc) {
    const int n_keys = static_cast<int>(s_end - s0 < bc ? s_end - s0 : bc);
    // Whether any (row, key) pair of the tile is visible: each warp checks its own rows against
    // the keys c = lane (mod 32), so together the warps cover every pair. A tile nobody sees
    // would score -inf everywhere and change nothing: skipping it keeps the result bit-identical.
    int seen = 0;
    for (int c = lane; c < n_keys && !seen; c += 32) {
      const int32_t kp = p.k_pos[s0 + c];
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        seen |= row0 + r < p.rows_total && kp >= 0 && kp <= qp[r] &&
                (p.window <= 0 || qp[r] - kp < p.window);
      }
    }
    // Also the barrier after which the previous tile is consumed (block-uniform result).
    if (!__syncthreads_or(seen)) continue;
    // The tile's entries follow each other when it lies in one block (ops/kv_blocks.h).
    const int64_t e0 = KvEntry(p.block_table, p.block_size, s0);
    const bool one_block = p.block_table == nullptr ||
                           s0 / p.block_size == (s0 + n_keys - 1) / p.block_size;
    for (int idx = tid; idx < n_keys * hd; idx += kAttentionWarps * 32) {
      const int c = idx / hd, d = idx % hd;
      const int64_t e =
          one_block ? e0 + c : KvEntry(p.block_table, p.block_size, s0 + c);
      const int64_t g = (e * p.n_kv + kvh) * p.hd + d;
      ks[idx] = p.k[g];
      vs[idx] = p.v[g];
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      if (row0 + r >= p.rows_total) continue;  // warp-uniform
      float* sc = scores + (warp * kRows + r) * bc;
      float tile_max = -INFINITY;
      for (int c = 0; c < n_keys; ++c) {
        const int32_t kp = p.k_pos[s0 + c];
        const bool visible =
            kp >= 0 && kp <= qp[r] && (p.window <= 0 || qp[r] - kp < p.window);
        float s = -INFINITY;
        if (visible) {  // warp-uniform: every lane sees the same positions
          float part = 0.0f;
#pragma unroll
          for (int i = 0; i < kPerLane; ++i) {
            if (i < per_lane) part += qr[r][i] * ks[c * hd + lane + 32 * i];
          }
          for (int off = 16; off > 0; off /= 2) part += __shfl_xor_sync(0xffffffffu, part, off);
          s = part * p.scale;
        }
        if (lane == 0) sc[c] = s;
        tile_max = fmaxf(tile_max, s);
      }
      __syncwarp();
      if (tile_max == -INFINITY) continue;  // nothing visible in this tile
      const float m_new = fmaxf(m[r], tile_max);
      const float corr = expf(m[r] - m_new);  // m[r] = -inf: 0, and acc, l are 0 anyway
      l[r] *= corr;
#pragma unroll
      for (int i = 0; i < kPerLane; ++i) acc[r][i] *= corr;
      for (int c = 0; c < n_keys; ++c) {
        const float s = sc[c];
        if (s == -INFINITY) continue;
        const float pr = expf(s - m_new);
        l[r] += pr;
#pragma unroll
        for (int i = 0; i < kPerLane; ++i) {
          if (i < per_lane) acc[r][i] += pr * vs[c * hd + lane + 32 * i];
        }
      }
      m[r] = m_new;
      __syncwarp();  // every lane has read sc before lane 0 rewrites it for the next tile
    }
  }

#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const int64_t row = row0 + r;
    if (row >= p.rows_total) continue;
    if (p.splits == 1) {
      float* o = p.out + (t_of[r] * p.n_heads + h_of[r]) * p.hd;
      const float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
#pragma unroll
      for (int i = 0; i < kPerLane; ++i) {
        if (i < per_lane) o[lane + 32 * i] = l[r] > 0.0f ? acc[r][i] * inv : 0.0f;
      }
    } else {
      const int64_t gi = static_cast<int64_t>(split) * p.n_kv * p.rows_total +
                         kvh * p.rows_total + row;
      if (lane == 0) {
        p.part_m[gi] = m[r];
        p.part_l[gi] = l[r];
      }
#pragma unroll
      for (int i = 0; i < kPerLane; ++i) {
        if (i < per_lane) p.part_acc[gi * p.hd + lane + 32 * i] = acc[r][i];
      }
    }
  }
  if (p.splits == 1 || p.counters == nullptr) return;  // uniform over the grid
  // The tile's last split to finish merges its rows: every thread's partial writes are fenced
  // before the block counts itself, and the merging block fences again before it reads.
  __threadfence();
  __syncthreads();  // every warp's partials written and fenced before thread 0 counts the block
  unsigned* counter = p.counters + kvh * p.row_tiles + blockIdx.x;
  if (!__syncthreads_or(threadIdx.x == 0 &&
                        atomicAdd(counter, 1u) == static_cast<unsigned>(p.splits) - 1)) {
    return;
  }
  __threadfence();
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    if (row0 + r < p.rows_total) CombineRow(p, kvh * p.rows_total + row0 + r, lane);
  }
  if (threadIdx.x == 0) *counter = 0;
}

// One warp per row (CombineRow), after the split kernel.
__global__ void AttnCombineKernel(AttnParams p) {
  GridDependency();
  const int64_t gi = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (gi >= p.n_kv * p.rows_total) return;
  CombineRow(p, gi, static_cast<int>(threadIdx.x % 32));
}

Status CheckArgs(const AttentionArgs& a) {
  if (a.T < 0 || a.S < 0 || a.n_heads <= 0 || a.n_kv_heads <= 0 || a.head_dim <= 0 ||
      a.n_heads % a.n_kv_heads != 0) {
    return InvalidArgument("AttentionDevice: bad shape T=" + std::to_string(a.T) + " S=" +
                           std::to_string(a.S) + " n_heads=" + std::to_string(a.n_heads) +
                           " n_kv_heads=" + std::to_string(a.n_kv_heads) + " head_dim=" +
                           std::to_string(a.head_dim));
  }
  if (a.T > 0 && (a.q == nullptr || a.q_pos == nullptr || a.out == nullptr ||
                  (a.S > 0 && (a.k == nullptr || a.v == nullptr || a.k_pos == nullptr)))) {
    return InvalidArgument("AttentionDevice: null device pointer");
  }
  if (a.block_table != nullptr && (a.block_size <= 0 || a.S % a.block_size != 0)) {
    return InvalidArgument("AttentionDevice: block table of blocks of " +
                           std::to_string(a.block_size) + " slots over S=" + std::to_string(a.S));
  }
  return Status::Ok();
}

template <int kPerLane, int kRows>
Status Launch(const AttnBatch& batch, const AttentionPlan& plan, dim3 grid, cudaStream_t stream) {
  auto kernel = AttnKernel<kPerLane, kRows>;
  if (plan.smem_bytes > 48 * 1024 || plan.needs_optin) {
    const cudaError_t e = cudaFuncSetAttribute(
        kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(plan.smem_bytes));
    if (e != cudaSuccess) {
      return Internal("attention: cannot opt in to " + std::to_string(plan.smem_bytes) +
                      " bytes of shared memory: " + cudaGetErrorString(e));
    }
  }
  LaunchKernel(kernel, grid, kAttentionWarps * 32, static_cast<size_t>(plan.smem_bytes), stream,
               batch);
  return LaunchStatus("attention launch");
}

Status CheckPlan(const AttentionPlan& plan, int64_t head_dim) {
  if (plan.head_dim != head_dim || plan.warps != kAttentionWarps || plan.bc <= 0 ||
      plan.smem_bytes != AttentionSmemBytes(plan.head_dim, plan.bc, plan.warps,
                                            plan.rows_per_warp) ||
      plan.rows_per_warp != (plan.head_dim <= 256 ? 4 : 2)) {
    return InvalidArgument("AttentionDevice: plan (head_dim " + std::to_string(plan.head_dim) +
                           ", bc " + std::to_string(plan.bc) + ") does not match head_dim " +
                           std::to_string(head_dim) + " or the kernel layout");
  }
  return Status::Ok();
}

// Every item well-formed and of item 0's heads and head_dim.
Status CheckBatch(const AttentionArgs* items, int count) {
  if (count < 1 || count > kMaxAttentionBatch) {
    return InvalidArgument("AttentionDevice: a batch of " + std::to_string(count) +
                           " items (1 to " + std::to_string(kMaxAttentionBatch) + ")");
  }
  for (int i = 0; i < count; ++i) {
    const AttentionArgs& a = items[i];
    G4_RETURN_IF_ERROR(CheckArgs(a));
    if (a.n_heads != items[0].n_heads || a.n_kv_heads != items[0].n_kv_heads ||
        a.head_dim != items[0].head_dim) {
      return InvalidArgument("AttentionDevice: batch item " + std::to_string(i) +
                             " has other heads or head_dim than item 0");
    }
  }
  return Status::Ok();
}

int64_t RowTiles(const AttentionArgs& a, const AttentionPlan& plan) {
  const int64_t rows_total = a.T * (a.n_heads / a.n_kv_heads);
  return (rows_total + plan.rows_per_block() - 1) / plan.rows_per_block();
}

}  // namespace

Status AttentionBatchWithPlan(const AttentionArgs* items, int count, const AttentionPlan& plan,
                              const int* splits, cudaStream_t stream, unsigned* counters,
                              int64_t n_counters) {
  G4_RETURN_IF_ERROR(CheckBatch(items, count));
  G4_RETURN_IF_ERROR(CheckPlan(plan, items[0].head_dim));
  AttnBatch batch{};
  batch.n_kv = items[0].n_kv_heads;
  int n = 0;
  int64_t max_tiles = 0, part_floats = 0, split_tiles = 0;
  int64_t part_at[kMaxAttentionBatch] = {};  // item's split state: floats into `part`
  int max_splits = 1;
  for (int i = 0; i < count; ++i) {
    const AttentionArgs& a = items[i];
    if (splits[i] < 1) return InvalidArgument("AttentionDevice: splits must be >= 1");
    if (a.T == 0) continue;
    if (a.S == 0) {  // no keys: every query sees nothing
      const size_t bytes = static_cast<size_t>(a.T * a.n_heads * a.head_dim) * sizeof(float);
      const cudaError_t e = cudaMemsetAsync(a.out, 0, bytes, stream);
      if (e != cudaSuccess) {
        return Internal(std::string("attention memset: ") + cudaGetErrorString(e));
      }
      continue;
    }
    AttnParams& p = batch.item[n++];
    p.q = a.q;
    p.k = a.k;
    p.v = a.v;
    p.q_pos = a.q_pos;
    p.k_pos = a.k_pos;
    p.block_table = a.block_table;
    p.block_size = a.block_size;
    p.T = a.T;
    p.S = a.S;
    p.n_heads = a.n_heads;
    p.n_kv = a.n_kv_heads;
    p.hd = a.head_dim;
    p.group = a.n_heads / a.n_kv_heads;
    p.rows_total = a.T * p.group;
    p.window = a.window;
    p.scale = a.scale;
    p.out = a.out;
    p.bc = plan.bc;
    // Whole key tiles per split; recount so that no split is empty.
    const int64_t key_tiles = (a.S + plan.bc - 1) / plan.bc;
    const int64_t want = splits[i] < key_tiles ? splits[i] : key_tiles;
    p.chunk = (key_tiles + want - 1) / want * plan.bc;
    p.splits = static_cast<int>((a.S + p.chunk - 1) / p.chunk);
    p.row_tiles = RowTiles(a, plan);
    if (p.splits > 1) {
      const int64_t rows = a.n_kv_heads * p.rows_total;
      part_at[n - 1] = part_floats;
      part_floats += p.splits * rows * (2 + a.head_dim);
      split_tiles += a.n_kv_heads * p.row_tiles;
    }
    max_tiles = p.row_tiles > max_tiles ? p.row_tiles : max_tiles;
    max_splits = p.splits > max_splits ? p.splits : max_splits;
  }
  if (n == 0) return Status::Ok();
  if (max_tiles > 0x7fffffff || batch.n_kv * n > 65535) {
    return InvalidArgument("AttentionDevice: grid too large");
  }

  void* part = nullptr;
  if (part_floats > 0) {
    const size_t bytes = static_cast<size_t>(part_floats) * sizeof(float);
    const cudaError_t e = cudaMallocAsync(&part, bytes, stream);
    if (e != cudaSuccess) {
      return Internal("attention: cannot allocate " + std::to_string(bytes) +
                      " bytes of split state: " + cudaGetErrorString(e));
    }
  }
  // The last split of each tile merges when every split item's tiles get a counter.
  const bool merge_in_kernel = counters != nullptr && split_tiles <= n_counters;
  int64_t counter0 = 0;
  for (int i = 0; i < n; ++i) {
    AttnParams& p = batch.item[i];
    if (p.splits == 1) continue;
    const int64_t rows = p.n_kv * p.rows_total;
    p.part_m = static_cast<float*>(part) + part_at[i];
    p.part_l = p.part_m + p.splits * rows;
    p.part_acc = p.part_l + p.splits * rows;
    if (merge_in_kernel) {
      p.counters = counters + counter0;
      counter0 += p.n_kv * p.row_tiles;
    }
  }
  const Status st = [&]() -> Status {
    const dim3 grid(static_cast<unsigned>(max_tiles), static_cast<unsigned>(batch.n_kv * n),
                    static_cast<unsigned>(max_splits));
    if (items[0].head_dim <= 256) {
      G4_RETURN_IF_ERROR((Launch<8, 4>(batch, plan, grid, stream)));
    } else {
      G4_RETURN_IF_ERROR((Launch<16, 2>(batch, plan, grid, stream)));
    }
    for (int i = 0; i < n; ++i) {
      const AttnParams& p = batch.item[i];
      if (p.splits == 1 || p.counters != nullptr) continue;
      constexpr int kCombineWarps = 4;
      const int64_t rows = p.n_kv * p.rows_total;
      LaunchKernel(AttnCombineKernel,
                   static_cast<unsigned>((rows + kCombineWarps - 1) / kCombineWarps),
                   kCombineWarps * 32, 0, stream, p);
      G4_RETURN_IF_ERROR(LaunchStatus("attention combine launch"));
    }
    return Status::Ok();
  }();
  if (part != nullptr) {
    const cudaError_t e = cudaFreeAsync(part, stream);
    if (st.ok() && e != cudaSuccess) {
      return Internal(std::string("attention: cudaFreeAsync: ") + cudaGetErrorString(e));
    }
  }
  return st;
}

Status AttentionDeviceWithPlan(const AttentionArgs& a, const AttentionPlan& plan, int splits,
                               cudaStream_t stream, unsigned* counters, int64_t n_counters) {
  return AttentionBatchWithPlan(&a, 1, plan, &splits, stream, counters, n_counters);
}

Status AttentionBatchDevice(const AttentionArgs* items, int count, const DeviceLimits& dev,
                            cudaStream_t stream, unsigned* counters, int64_t n_counters) {
  G4_RETURN_IF_ERROR(CheckBatch(items, count));
  G4_ASSIGN_OR_RETURN(AttentionPlan plan, ChooseAttentionPlan(items[0].head_dim, dev.smem_optin,
                                                              dev.smem_default));
  // The whole launch's query blocks decide whether keys are split to fill the device.
  int64_t query_blocks = 0;
  for (int i = 0; i < count; ++i) query_blocks += RowTiles(items[i], plan) * items[i].n_kv_heads;
  int splits[kMaxAttentionBatch];
  for (int i = 0; i < count; ++i) {
    splits[i] = AttentionKeySplits(query_blocks, items[i].S, plan.bc, dev.sm_count);
  }
  return AttentionBatchWithPlan(items, count, plan, splits, stream, counters, n_counters);
}

Status AttentionDevice(const AttentionArgs& a, const DeviceLimits& dev, cudaStream_t stream,
                       unsigned* counters, int64_t n_counters) {
  return AttentionBatchDevice(&a, 1, dev, stream, counters, n_counters);
}

}  // namespace g4::cuda
