// Attention: softmax(q k^T * scale + mask) v for every query head, with GQA/MQA (query head h
// reads KV head h / (n_heads / n_kv_heads)). The mask is computed from absolute positions,
// never from slot order: key s is visible to query t iff k_pos[s] >= 0 (a filled slot),
// k_pos[s] <= q_pos[t], and, when window > 0, q_pos[t] - k_pos[s] < window.
// Head dims are any size (Gemma 4 mixes 256 and 512); softmax in f32 (ref: f64).
// A query that sees no key gets zeros. K/V are f32 (k, v), bf16 (k16, v16) or int8 blocks of
// kQ8Block values with an f32 scale each (k8, v8, k_scale8, v_scale8: value = scale * q, as
// ops/kv_write.h stores them; head_dim % kQ8Block == 0), the other pointers null, turned into
// f32 exactly as they are read; bf16 and q8 are the cpu and ref backends' only. With a
// block_table (ops/kv_blocks.h) slot s's K/V (and scales) are entry KvEntry(s) of those arrays,
// its position still k_pos[s]: a cache whose blocks sequences share.
#pragma once

#include <cstdint>

#include "core/thread_pool.h"

namespace g4 {

struct AttentionArgs {
  const float* q = nullptr;        // [T, n_heads, head_dim]
  const float* k = nullptr;        // [S, n_kv_heads, head_dim]
  const float* v = nullptr;        // [S, n_kv_heads, head_dim]
  const uint16_t* k16 = nullptr;   // [S, n_kv_heads, head_dim] bf16, where k and v are null
  const uint16_t* v16 = nullptr;   // [S, n_kv_heads, head_dim] bf16
  const int8_t* k8 = nullptr;      // [S, n_kv_heads, head_dim] int8, where k and v are null
  const int8_t* v8 = nullptr;      // [S, n_kv_heads, head_dim] int8
  const float* k_scale8 = nullptr;  // [S, n_kv_heads, head_dim / kQ8Block]
  const float* v_scale8 = nullptr;  // [S, n_kv_heads, head_dim / kQ8Block]
  const int32_t* q_pos = nullptr;  // [T]
  const int32_t* k_pos = nullptr;  // [S]; negative = empty slot
  int64_t T = 0, S = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0;
  int32_t window = 0;              // 0: causal only
  float scale = 1.0f;
  const int32_t* block_table = nullptr;  // [S / block_size] or null (entry = slot)
  int32_t block_size = 0;                // > 0 with a table; S % block_size == 0
  float* out = nullptr;            // [T, n_heads, head_dim]
};

using AttentionOp = void(ThreadPool& pool, const AttentionArgs& args);
using AttentionFn = AttentionOp*;

// Several sequences' attention as one op (a decode step's items): each of items[0..count) as
// AttentionFn computes it. Every item has the same n_heads, n_kv_heads, head_dim, window and
// scale (one layer); T, S and the pointers are its own. A device runs the batch as one launch
// where one item at a time would be `count` launches per layer.
inline constexpr int kMaxAttentionBatch = 8;

struct AttentionBatchArgs {
  AttentionArgs items[kMaxAttentionBatch];
  int count = 0;
};

using AttentionBatchOp = void(ThreadPool& pool, const AttentionBatchArgs& batch);
using AttentionBatchFn = AttentionBatchOp*;

// The batch as one kAttend per item: the ref and CPU ops.
template <AttentionFn kAttend>
void AttentionEach(ThreadPool& pool, const AttentionBatchArgs& batch) {
  for (int i = 0; i < batch.count; ++i) kAttend(pool, batch.items[i]);
}

}  // namespace g4
