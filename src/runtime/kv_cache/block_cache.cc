#include "runtime/kv_cache/block_cache.h"

#include <algorithm>
#include <numeric>

namespace g4 {

BlockKvCache::BlockKvCache(int n_kv_heads, int head_dim, int block_size, int max_positions,
                           Memory& memory)
    : row_(n_kv_heads * head_dim),
      block_size_(block_size),
      max_positions_(max_positions),
      memory_(&memory),
      view_k_(memory),
      view_v_(memory),
      view_pos_(memory) {}

void BlockKvCache::Reset() {
  blocks_.clear();
  size_ = 0;
  pos_uploaded_ = 0;
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
  }
  const size_t entry = static_cast<size_t>(row_) * sizeof(float);
  // The chunk in runs that stay inside one block: one copy per block touched.
  for (int64_t i = 0; i < C;) {
    const int64_t p = size_ + i;
    const size_t b = static_cast<size_t>(p / block_size_);
    const int64_t off = p % block_size_, run = std::min<int64_t>(C - i, block_size_ - off);
    if (b == blocks_.size()) {
      Block blk{Buffer<float>(*memory_), Buffer<float>(*memory_)};
      const size_t n = static_cast<size_t>(block_size_) * row_;
      G4_RETURN_IF_ERROR(blk.k.Allocate(n));
      G4_RETURN_IF_ERROR(blk.v.Allocate(n));
      blocks_.push_back(std::move(blk));
    }
    G4_RETURN_IF_ERROR(memory_->Copy(blocks_[b].k.data() + off * row_, k + i * row_, run * entry));
    G4_RETURN_IF_ERROR(memory_->Copy(blocks_[b].v.data() + off * row_, v + i * row_, run * entry));
    i += run;
  }
  size_ += static_cast<int32_t>(C);

  G4_RETURN_IF_ERROR(view_k_.Allocate(static_cast<size_t>(size_) * row_));
  G4_RETURN_IF_ERROR(view_v_.Allocate(view_k_.size()));
  for (int32_t start = 0; start < size_; start += block_size_) {
    const size_t n = static_cast<size_t>(std::min(block_size_, size_ - start));
    const Block& blk = blocks_[static_cast<size_t>(start / block_size_)];
    G4_RETURN_IF_ERROR(memory_->Copy(view_k_.data() + start * row_, blk.k.data(), n * entry));
    G4_RETURN_IF_ERROR(memory_->Copy(view_v_.data() + start * row_, blk.v.data(), n * entry));
  }
  // The view's positions are 0..size_-1: upload only the new ones, unless the buffer grew
  // (a new allocation).
  const size_t capacity = view_pos_.capacity();
  G4_RETURN_IF_ERROR(view_pos_.Allocate(static_cast<size_t>(size_)));
  const int32_t have = view_pos_.capacity() == capacity ? pos_uploaded_ : 0;
  std::vector<int32_t> fresh(static_cast<size_t>(size_ - have));
  std::iota(fresh.begin(), fresh.end(), have);
  G4_RETURN_IF_ERROR(memory_->Upload(view_pos_.data() + have, fresh.data(), fresh.size() * 4));
  pos_uploaded_ = size_;
  return KvView{view_k_.data(), view_v_.data(), view_pos_.data(), size_};
}

}  // namespace g4
