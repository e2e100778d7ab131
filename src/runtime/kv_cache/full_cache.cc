#include "runtime/kv_cache/full_cache.h"

#include <algorithm>
#include <string>
#include <vector>

namespace g4 {

FullKvCache::FullKvCache(int n_kv_heads, int head_dim, int block_size, int max_positions,
                         Memory& memory, KvDtype dtype)
    : row_(n_kv_heads * head_dim),
      block_size_(block_size),
      max_positions_(max_positions),
      memory_(&memory),
      pool_(std::make_shared<KvBlockPool>(memory, dtype, row_, block_size)),
      table_(memory),
      pos_(memory) {}

FullKvCache::~FullKvCache() { ReleaseBlocks(); }

void FullKvCache::ReleaseBlocks() {
  for (int32_t b : blocks_) pool_->Unref(b);
  blocks_.clear();
}

void FullKvCache::Reset() {
  size_ = 0;
  clear_pos_ = capacity_ > 0;  // keeps the blocks: a recorded step over them stays valid
}

Status FullKvCache::Truncate(int32_t n) {
  if (n < 0 || n > size_) {
    return Internal("full-attention KV cache: truncate to " + std::to_string(n) + " of " +
                    std::to_string(size_) + " positions");
  }
  if (n == size_) return Status();
  if (!clear_pos_) {  // after a Reset the whole array is emptied at the next Reserve anyway
    const std::vector<int32_t> empty(static_cast<size_t>(size_ - n), -1);
    G4_RETURN_IF_ERROR(memory_->Upload(pos_.data() + n, empty.data(), empty.size() * 4));
  }
  size_ = n;
  return Status();
}

Status FullKvCache::Grow(int64_t need) {
  const int64_t blocks_max = (max_positions_ + block_size_ - 1) / block_size_;
  int64_t want = std::max(need, capacity_ + capacity_ / 2);
  want = std::min((want + block_size_ - 1) / block_size_, blocks_max);
  G4_RETURN_IF_ERROR(pool_->Allocate(want - static_cast<int64_t>(blocks_.size()), &blocks_));
  return Reshape(want * block_size_);
}

Status FullKvCache::Reshape(int64_t capacity) {
  // New buffers before the old ones go, so that storage() moves.
  Buffer<int32_t> table(*memory_), pos(*memory_);
  G4_RETURN_IF_ERROR(table.Assign(blocks_));
  std::vector<int32_t> p(static_cast<size_t>(capacity), -1);
  for (int32_t i = 0; i < size_; ++i) p[static_cast<size_t>(i)] = i;
  G4_RETURN_IF_ERROR(pos.Assign(p));
  table_ = std::move(table);
  pos_ = std::move(pos);
  capacity_ = capacity;
  clear_pos_ = false;
  return Status();
}

Status FullKvCache::OwnBlocks(int64_t from, int64_t to) {
  for (int64_t b = from / block_size_; b < (to + block_size_ - 1) / block_size_; ++b) {
    const int32_t old = blocks_[static_cast<size_t>(b)];
    if (!pool_->shared(old)) continue;
    // The entries of the block this cache still holds (below size_) come along.
    const int64_t keep = std::clamp<int64_t>(size_ - b * block_size_, 0, block_size_);
    std::vector<int32_t> fresh;
    G4_RETURN_IF_ERROR(pool_->Allocate(1, &fresh, keep));
    G4_RETURN_IF_ERROR(pool_->CopyBlock(old, fresh[0], keep));
    pool_->Unref(old);
    blocks_[static_cast<size_t>(b)] = fresh[0];
    G4_RETURN_IF_ERROR(memory_->Upload(table_.data() + b, &fresh[0], sizeof(int32_t)));
  }
  return Status();
}

Status FullKvCache::ShareFrom(const FullKvCache& src, int32_t n) {
  if (src.row_ != row_ || src.block_size_ != block_size_ ||
      src.pool_->dtype() != pool_->dtype() || n < 0 || n > src.size_ || n > max_positions_) {
    return Internal("full-attention KV cache: " + std::to_string(n) + " of " +
                    std::to_string(src.size_) +
                    " positions shared with a cache of another shape or of " +
                    std::to_string(max_positions_));
  }
  ReleaseBlocks();
  pool_ = src.pool_;
  const int64_t blocks = (n + block_size_ - 1) / block_size_;
  for (int64_t b = 0; b < blocks; ++b) {
    blocks_.push_back(src.blocks_[static_cast<size_t>(b)]);
    pool_->Ref(blocks_.back());
  }
  size_ = n;
  return Reshape(blocks * block_size_);
}

Status FullKvCache::Reserve(const int32_t* pos, int64_t C) {
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
  if (clear_pos_) {
    const std::vector<int32_t> empty(static_cast<size_t>(capacity_), -1);
    G4_RETURN_IF_ERROR(memory_->Upload(pos_.data(), empty.data(), empty.size() * 4));
    clear_pos_ = false;
  }
  if (size_ + C > capacity_) G4_RETURN_IF_ERROR(Grow(size_ + C));
  G4_RETURN_IF_ERROR(OwnBlocks(size_, size_ + C));
  size_ += static_cast<int32_t>(C);
  return Status();
}

StatusOr<KvView> FullKvCache::Write(const KvWriter& write, const float* k, const float* v,
                                    const int32_t* dev_pos, int64_t C) {
  if (size_ > capacity_ || capacity_ == 0) {
    return Internal("full-attention KV cache: Write before Reserve");
  }
  KvWriteArgs a;
  a.k = k;
  a.v = v;
  a.pos = dev_pos;
  a.C = C;
  a.row = row_;
  a.window = 0;
  a.capacity = capacity_;
  pool_->Target(&a);
  a.pos_cache = pos_.data();
  a.block_table = table_.data();
  a.block_size = block_size_;
  write(a);
  KvView view{.pos = pos_.data(), .S = capacity_};
  pool_->View(&view);
  view.block_table = table_.data();
  view.block_size = block_size_;
  return view;
}

}  // namespace g4
