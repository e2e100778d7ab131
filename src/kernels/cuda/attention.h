// CUDA attention (ops/attention.h), every pointer in AttentionArgs on the device. Same
// semantics as ref::Attention: masks from absolute positions (k_pos < 0: empty slot; k_pos <=
// q_pos; q_pos - k_pos < window when window > 0), GQA head h reads KV head
// h / (n_heads / n_kv_heads), f32 online softmax, a query that sees no key gets zeros.
// One kernel serves prefill and decode: a block owns a KV head and a tile of query rows (the
// (position, head) pairs of that KV head's group, so GQA heads share each K/V tile) and walks
// keys in shared-memory tiles (AttentionPlan, tiles.h). When the query tiles are too few to fill
// the device (decode), the keys are split across blocks (flash-decoding) and the partial
// softmax states are merged: by the last split of each tile to finish, given counters, else by
// a second kernel. A batch of sequences (a decode step's items) is one launch.
#pragma once

#include <cuda_runtime.h>

#include "core/status.h"
#include "kernels/cuda/tiles.h"
#include "ops/attention.h"

namespace g4::cuda {

// Plans from `dev` (ChooseAttentionPlan; its refusal is returned before any launch) and picks
// the key splits from dev.sm_count. Launches on `stream` without synchronizing; a split run
// allocates its partial states with cudaMallocAsync on the same stream. counters: n_counters
// device counters, zero, used by one launch at a time (every op runs on one stream): with at
// least n_kv_heads x (query tiles), a split run merges in its last blocks (each resets its
// counter); otherwise, or when null, a second kernel merges.
Status AttentionDevice(const AttentionArgs& a, const DeviceLimits& dev, cudaStream_t stream,
                       unsigned* counters = nullptr, int64_t n_counters = 0);

// With an explicit plan (plan.head_dim must equal a.head_dim) and key split count (>= 1), for
// tests that must reach small tiles and split runs on any device.
Status AttentionDeviceWithPlan(const AttentionArgs& a, const AttentionPlan& plan, int splits,
                               cudaStream_t stream, unsigned* counters = nullptr,
                               int64_t n_counters = 0);

// items[0..count) (1 to kMaxAttentionBatch, every item of item 0's heads and head_dim: one
// layer of a decode step's sequences) in one launch: the grid spans the largest item, a block
// past its item's query tiles or key splits exits. Key splits are chosen for the whole
// launch's query blocks. Counters as above, one per (item, KV head, query tile) of the split
// items; too few: a merge kernel per split item.
Status AttentionBatchDevice(const AttentionArgs* items, int count, const DeviceLimits& dev,
                            cudaStream_t stream, unsigned* counters = nullptr,
                            int64_t n_counters = 0);
// The same with an explicit plan and splits[i] per item.
Status AttentionBatchWithPlan(const AttentionArgs* items, int count, const AttentionPlan& plan,
                              const int* splits, cudaStream_t stream,
                              unsigned* counters = nullptr, int64_t n_counters = 0);

}  // namespace g4::cuda
