// RingKvCache: the K/V of one sliding-window layer for one sequence. W slots; absolute
// position p lives in slot p % W, next to its position, so the ring never holds more than the
// window can see and attention masks by the recorded positions (q - k < W), not slot order.
// K/V and the slot positions live in a Memory (a GPU's, under the CUDA backend) and are written
// by the KvWrite op, which picks the slot from the device positions; the host keeps a mirror of
// the slot positions for the order checks and tests. K/V are stored as the cache's KvDtype.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/status.h"
#include "model/kv_store.h"
#include "ops/memory.h"
#include "runtime/kv_cache/kv_rows.h"

namespace g4 {

class RingKvCache {
 public:
  RingKvCache(int window, int n_kv_heads, int head_dim, Memory& memory = HostMemory(),
              KvDtype dtype = KvDtype::kF32);

  // The host's part of appending positions pos[0..C) (consecutive, following the last stored
  // one): the order check, the ring's allocation on first use (zeroed, every slot empty), the
  // upload of emptied slots after a Reset, the mirror. See KvStore.
  Status Reserve(const int32_t* pos, int64_t C);
  // After Reserve of the same chunk: stores k, v: [C, nkv, hd] at positions dev_pos[0..C) (all
  // in the cache's Memory) and returns what the chunk's queries attend over. For C == 1 that
  // is the ring itself (the slot overwritten held position p - W, which the query at p cannot
  // see), written by one `write` call: the same call every step. A chunk that ends within the
  // first W positions is written in place too (its slots were empty) and the view is the
  // ring's first next_pos() slots. Otherwise (C > 1) the ring's earlier entries and the chunk
  // are gathered into a scratch buffer first, because writing the chunk would evict positions
  // its first queries still need; a bf16 chunk goes there through `write` too (rounded as the
  // ring stores it), so its queries see the values decode will.
  StatusOr<KvView> Write(const KvWriter& write, const float* k, const float* v,
                         const int32_t* dev_pos, int64_t C);

  // The ring's state at one position, for a later sequence that shares the prefix up to there
  // (prefix reuse: a ring cannot be rolled back, its older positions are overwritten).
  struct Snapshot {
    explicit Snapshot(const RingKvCache& ring);
    KvRows kv;                    // K and V: [entries, nkv, hd], the ring's first slots
    int32_t entries = 0;          // min(next_pos, W): the slots in use (none empty before)
    Buffer<int32_t> dev_pos;      // [W]
    std::vector<int32_t> pos;     // [W], the host mirror
    int32_t next_pos = 0;
    size_t bytes() const {
      return static_cast<size_t>(entries) * 2 * kv.entry_bytes() + pos.size() * 4;
    }
  };
  // Copies the ring into *s (allocated on first use, in the cache's Memory).
  Status SaveTo(Snapshot* s) const;
  // Puts the ring back as *s holds it. The storage does not move (a recorded step stays valid).
  Status RestoreFrom(const Snapshot& s);
  // Makes this ring (same shape, dtype and Memory) a copy of src (prefix reuse: a sequence
  // branching from a kept cache that stays kept).
  Status CopyFrom(const RingKvCache& src);
  // Keeping positions [0, n) needs every position the window at n sees: true for n ==
  // next_pos(), and for any n while the ring has not wrapped (next_pos() <= W, nothing evicted).
  bool CanTruncate(int32_t n) const {
    return n == next_pos_ || (n >= 0 && n < next_pos_ && next_pos_ <= window_);
  }
  // Empties the slots of positions >= n (CanTruncate(n) must hold).
  Status Truncate(int32_t n);

  int window() const { return window_; }
  int32_t next_pos() const { return next_pos_; }
  // Position held by each slot ([W]; -1 = never written): for tests of the invariant.
  const std::vector<int32_t>& slot_positions() const { return pos_; }
  size_t bytes() const { return static_cast<size_t>(window_) * (2 * k_.entry_bytes() + 4); }
  // Moves only on the first Reserve (the allocation).
  const void* storage() const { return k_.storage(); }
  void Reset();

 private:
  KvWriteArgs Target(const float* k, const float* v, const int32_t* dev_pos, int64_t C);
  // The ring as kv's first `entries` slots (the rest empty) with device positions dev_pos, or
  // the host's pos when dev_pos is stale or null. RestoreFrom and CopyFrom.
  Status Load(const KvRows& kv, int32_t entries, const Buffer<int32_t>* dev_pos,
              const std::vector<int32_t>& pos, int32_t next_pos);
  int32_t entries() const { return k_.empty() ? 0 : std::min(next_pos_, window_); }

  int window_, row_;  // row_ = nkv * hd values per entry
  Memory* memory_;
  KvRows k_;                   // K and V: [W, nkv, hd]
  Buffer<int32_t> dev_pos_;    // [W]: what pos_ mirrors
  std::vector<int32_t> pos_;   // [W]
  std::vector<int32_t> before_;  // pos_ before the reserved chunk (C > 1 only)
  int32_t next_pos_ = 0;
  bool upload_pos_ = false;    // dev_pos_ must be refreshed from pos_ (after a Reset)
  KvRows scratch_;                       // K and V: [W + C, nkv, hd]
  Buffer<int32_t> scratch_pos_;          // [W + C]
};

}  // namespace g4
