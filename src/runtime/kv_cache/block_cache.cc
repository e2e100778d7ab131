#include "runtime/kv_cache/block_cache.h"

#include <algorithm>
#include <cstring>
#include <numeric>

namespace g4 {

BlockKvCache::BlockKvCache(int n_kv_heads, int head_dim, int block_size, int max_positions)
    : row_(n_kv_heads * head_dim), block_size_(block_size), max_positions_(max_positions) {}

void BlockKvCache::Reset() {
  blocks_.clear();
  size_ = 0;
}

StatusOr<KvView> BlockKvCache::Update(const float* k, const float* v, const int32_t* pos,
                                      int64_t C) {
  if (size_ + C > max_positions_) {
    return InvalidArgument("KV cache full: " + std::to_string(size_ + C) +
                           " positions exceed the context of " + std::to_string(max_positions_));
  }
  for (int64_t i = 0; i < C; ++i) {
    if (pos[i] != size_ + i) {
      return Internal("full-attention KV cache: position " + std::to_string(pos[i]) +
                      " written where " + std::to_string(size_ + i) + " was expected");
    }
    const int64_t p = size_ + i;
    const size_t b = static_cast<size_t>(p / block_size_), off = static_cast<size_t>(p % block_size_);
    if (b == blocks_.size()) {
      const size_t n = static_cast<size_t>(block_size_) * row_;
      blocks_.push_back(Block{std::make_unique<float[]>(n), std::make_unique<float[]>(n)});
    }
    std::memcpy(&blocks_[b].k[off * row_], k + i * row_, row_ * sizeof(float));
    std::memcpy(&blocks_[b].v[off * row_], v + i * row_, row_ * sizeof(float));
  }
  size_ += static_cast<int32_t>(C);

  view_k_.resize(static_cast<size_t>(size_) * row_);
  view_v_.resize(view_k_.size());
  for (int32_t start = 0; start < size_; start += block_size_) {
    const size_t n = static_cast<size_t>(std::min(block_size_, size_ - start)) * row_;
    const Block& blk = blocks_[static_cast<size_t>(start / block_size_)];
    std::memcpy(&view_k_[static_cast<size_t>(start) * row_], blk.k.get(), n * sizeof(float));
    std::memcpy(&view_v_[static_cast<size_t>(start) * row_], blk.v.get(), n * sizeof(float));
  }
  const size_t old = view_pos_.size();
  view_pos_.resize(static_cast<size_t>(size_));
  std::iota(view_pos_.begin() + static_cast<int64_t>(old), view_pos_.end(), static_cast<int32_t>(old));
  return KvView{view_k_.data(), view_v_.data(), view_pos_.data(), size_};
}

}  // namespace g4
