// RingKvCache: the K/V of one sliding-window layer for one sequence. W slots; absolute
// position p lives in slot p % W, next to its position, so the ring never holds more than the
// window can see and attention masks by the recorded positions (q - k < W), not slot order.
// K/V live in a Memory (a GPU's, under the CUDA backend); the slot positions are kept on the
// host too, for the order checks and tests, and uploaded beside the K/V.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "model/kv_store.h"
#include "ops/memory.h"

namespace g4 {

class RingKvCache {
 public:
  RingKvCache(int window, int n_kv_heads, int head_dim, Memory& memory = HostMemory());

  // Stores a chunk k, v: [C, nkv, hd] (in the cache's Memory) at consecutive positions
  // pos[0..C) (host) following the last stored one, and returns what the chunk's queries attend
  // over. For C == 1 that is the ring itself (the slot overwritten held position p - W, which
  // the query at p cannot see). For C > 1 the ring's earlier entries and the chunk are gathered
  // into a scratch buffer first, because writing the chunk would evict positions its first
  // queries still need. The ring is allocated (zeroed, every slot empty) on the first Update.
  StatusOr<KvView> Update(const float* k, const float* v, const int32_t* pos, int64_t C);

  int window() const { return window_; }
  int32_t next_pos() const { return next_pos_; }
  // Position held by each slot ([W]; -1 = never written): for tests of the invariant.
  const std::vector<int32_t>& slot_positions() const { return pos_; }
  size_t bytes() const { return static_cast<size_t>(window_) * (2 * row_ * sizeof(float) + 4); }
  void Reset();

 private:
  Status Allocate();
  // Copies n consecutive entries (positions first..first+n-1, n <= W) into their slots: at most
  // two contiguous runs, split where the ring wraps.
  Status Write(const float* k, const float* v, int32_t first, int64_t n);

  int window_, row_;  // row_ = nkv * hd floats per entry
  Memory* memory_;
  Buffer<float> k_, v_;        // [W, nkv, hd]
  Buffer<int32_t> dev_pos_;    // [W], the device copy of pos_
  std::vector<int32_t> pos_;   // [W]
  int32_t next_pos_ = 0;
  Buffer<float> scratch_k_, scratch_v_;  // [W + C, nkv, hd]
  Buffer<int32_t> scratch_pos_;          // [W + C]
};

}  // namespace g4
