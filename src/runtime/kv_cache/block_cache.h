// BlockKvCache: the K/V of one full-attention layer for one sequence, grown in fixed-size
// blocks of `block_size` positions (the unit a shared pool will hand out to many sequences),
// in a Memory (a GPU's, under the CUDA backend). The attention kernel takes one contiguous
// [S, nkv, hd] array, so Update gathers the blocks into a view: O(context) bytes per step,
// small next to the weights read per step.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/status.h"
#include "model/kv_store.h"
#include "ops/memory.h"

namespace g4 {

class BlockKvCache {
 public:
  BlockKvCache(int n_kv_heads, int head_dim, int block_size, int max_positions,
               Memory& memory = HostMemory());

  // Appends a chunk k, v: [C, nkv, hd] (in the cache's Memory) at positions pos[0..C) (host;
  // consecutive, following the last stored one) and returns every stored entry, chunk
  // included, in position order.
  StatusOr<KvView> Update(const float* k, const float* v, const int32_t* pos, int64_t C);

  int32_t size() const { return size_; }
  int block_size() const { return block_size_; }
  size_t num_blocks() const { return blocks_.size(); }
  size_t bytes() const { return blocks_.size() * static_cast<size_t>(block_size_) * row_ * 2 * 4; }
  void Reset();

 private:
  struct Block {
    Buffer<float> k, v;  // [block_size, nkv, hd] each
  };

  int row_, block_size_, max_positions_;
  Memory* memory_;
  std::vector<Block> blocks_;
  int32_t size_ = 0;
  Buffer<float> view_k_, view_v_;  // [size_, nkv, hd]
  Buffer<int32_t> view_pos_;       // [size_]: 0, 1, ...
  int32_t pos_uploaded_ = 0;       // entries of view_pos_ already written
};

}  // namespace g4
