#include "runtime/kv_cache/block_pool.h"

#include <algorithm>
#include <string>

namespace g4 {

Status KvBlockPool::Allocate(int64_t n, std::vector<int32_t>* out, int64_t filled) {
  const int64_t have = static_cast<int64_t>(free_.size());
  if (n > have) {
    const int64_t cap = capacity();
    const int64_t grown = std::max(cap + n - have, cap + cap / 2);
    KvRows rows(rows_.memory(), rows_.dtype(), rows_.row());
    G4_RETURN_IF_ERROR(rows.Allocate(grown * block_size_));
    G4_RETURN_IF_ERROR(rows.CopyFrom(rows_, cap * block_size_));
    rows_ = std::move(rows);
    refs_.resize(static_cast<size_t>(grown), 0);
    // Free blocks are taken from the back: keep the lowest last, so a cache growing alone
    // holds blocks 0, 1, 2, ... (its table the identity).
    std::vector<int32_t> added;
    for (int64_t b = grown - 1; b >= cap; --b) added.push_back(static_cast<int32_t>(b));
    free_.insert(free_.begin(), added.begin(), added.end());
    ++generation_;
  }
  // Zeroed a run of consecutive blocks at a time (a cache growing alone gets b, b + 1, ...):
  // one call each, a device memset rather than one per block.
  int64_t run = 0, end = 0;  // blocks [run, end) not zeroed yet
  for (int64_t i = 0; i < n; ++i) {
    const int32_t b = free_.back();
    free_.pop_back();
    refs_[static_cast<size_t>(b)] = 1;
    out->push_back(b);
    if (b == end && filled == 0) {
      ++end;
      continue;
    }
    G4_RETURN_IF_ERROR(rows_.Zero(run * block_size_ + filled, end * block_size_));
    run = b;
    end = b + 1;
  }
  return rows_.Zero(run * block_size_ + filled, end * block_size_);
}

void KvBlockPool::Unref(int32_t block) {
  if (--refs_[static_cast<size_t>(block)] == 0) free_.push_back(block);
}

Status KvBlockPool::CopyBlock(int32_t from, int32_t to, int64_t entries) {
  return rows_.CopyFrom(rows_, entries, int64_t{to} * block_size_, int64_t{from} * block_size_);
}

}  // namespace g4
