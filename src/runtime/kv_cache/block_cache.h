// BlockKvCache: the K/V of one full-attention layer for one sequence, grown in fixed-size
// blocks of `block_size` positions (the unit a shared pool will hand out to many sequences).
// The attention kernel takes one contiguous [S, nkv, hd] array, so Update gathers the blocks
// into a view: O(context) bytes per step, small next to the weights read per step.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/status.h"
#include "model/kv_store.h"

namespace g4 {

class BlockKvCache {
 public:
  BlockKvCache(int n_kv_heads, int head_dim, int block_size, int max_positions);

  // Appends a chunk k, v: [C, nkv, hd] at positions pos[0..C) (consecutive, following the last
  // stored one) and returns every stored entry, chunk included, in position order.
  StatusOr<KvView> Update(const float* k, const float* v, const int32_t* pos, int64_t C);

  int32_t size() const { return size_; }
  int block_size() const { return block_size_; }
  size_t num_blocks() const { return blocks_.size(); }
  size_t bytes() const { return blocks_.size() * static_cast<size_t>(block_size_) * row_ * 2 * 4; }
  void Reset();

 private:
  struct Block {
    std::unique_ptr<float[]> k, v;  // [block_size, nkv, hd] each
  };

  int row_, block_size_, max_positions_;
  std::vector<Block> blocks_;
  int32_t size_ = 0;
  std::vector<float> view_k_, view_v_;
  std::vector<int32_t> view_pos_;
};

}  // namespace g4
