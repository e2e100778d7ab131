// KeptCaches: finished sequences' KV caches kept for prefix reuse, most recently used first,
// and the accounting that lets branches of one kept cache be admitted on their own blocks.
// A branch (a prompt that leaves a kept cache part way in) holds the kept cache's whole blocks
// of its prefix without copying them (SequenceKvCache::Clone): while the kept cache is pinned
// those blocks are counted once, in its bytes, and the branch reserves only what it adds. A
// pinned cache is never evicted, taken over or superseded, so the credit stays true until the
// branch unpins it. The engine calls every method under its own mutex.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "runtime/kv_cache/kv_cache.h"

namespace g4 {

// A finished sequence's cache kept for prefix reuse.
struct KeptCache {
  std::unique_ptr<SequenceKvCache> cache;
  std::vector<int32_t> ids;              // the tokens at positions [0, cache->size())
  std::unique_ptr<KvSnapshot> snapshot;  // the cache when its prompt was in, or null
  std::vector<float> logits;             // that prompt's last logits
  std::unique_ptr<KvSnapshot> branch;    // the cache at its branch point (Resumed), or null
  uint64_t id = 0;                       // set by Keep
  int pins = 0;                          // plans and sequences branching from it
  bool claimed = false;                  // a plan takes it over
};

// Where a prompt resumes, decided before anything is taken (Plan) so that admission can count
// what the sequence will share.
struct ResumePlan {
  uint64_t kept = 0;       // the kept cache's id; 0: none shares a usable prefix
  int32_t len = 0;         // the positions it gives
  bool take_over = false;  // the prompt goes on from all of it: the cache itself is taken
  bool same_prompt = false;  // len is the whole prompt: its kept logits give the first token
  // A branch's whole blocks of [0, len) in the full layers (SequenceKvCache::SharedBytes): its
  // reservation leaves them out while it pins the kept cache.
  size_t shared_bytes = 0;
  int32_t branch = 0;  // Resumed::branch
};

// Where a new sequence starts (Take).
struct Resumed {
  std::unique_ptr<SequenceKvCache> cache;  // null: start from an empty cache
  int32_t cached = 0;                      // the positions it holds
  // The same prompt again: its last logits, and for a cache taken over its state there.
  std::unique_ptr<KvSnapshot> snapshot;
  std::vector<float> logits;
  // Where the prompt leaves a kept cache part way in, past what could be resumed (0: no such
  // point): the sequence keeps a snapshot there, so that the next prompt leaving at the same
  // point (after a shared system prompt) resumes there once the rings have moved.
  int32_t branch = 0;
  // A cache taken over brings its branch snapshot (its prefix is the prompt's): the next prompt
  // leaving there finds it in what this sequence keeps.
  std::unique_ptr<KvSnapshot> branch_snapshot;
  // A branch's pin (its kept cache's id, for Unpin when the sequence ends; 0: none) and the
  // bytes it shares through it (ResumePlan::shared_bytes).
  uint64_t pinned = 0;
  size_t shared_bytes = 0;
};

class KeptCaches {
 public:
  // The kept cache with the longest usable prefix of `prompt` (none that a plan takes over),
  // pinned for a branch or claimed to be taken over. Every plan ends in Take or Release.
  ResumePlan Plan(const std::vector<int32_t>& prompt);
  void Release(const ResumePlan& plan);
  // Carries a plan out: the kept cache taken out, or a copy put back into the prefix's state
  // (restored from a snapshot or truncated) while the kept one stays, pinned by the result
  // when it shares blocks through it. Empty, and the plan released, when the copy fails.
  Resumed Take(const ResumePlan& plan);
  void Unpin(uint64_t id);

  // Keeps a finished sequence's cache, most recently used; kept caches it holds all of (it ran
  // from a copy of one) go unless pinned, leaving it the snapshots it lacks.
  void Keep(KeptCache kept);
  // Evicts the least recently used caches that are neither pinned nor claimed until their
  // bytes are at most `limit`.
  void EvictTo(size_t limit);
  void Clear();

  // What the kept caches hold: their allocations, snapshots and logits, a block several of
  // them share counted once (blocks they share with running branches are counted here).
  size_t bytes() const { return bytes_; }
  int size() const { return static_cast<int>(kept_.size()); }

 private:
  KeptCache* Find(uint64_t id);
  void Recount();

  std::deque<KeptCache> kept_;  // most recently used first
  size_t bytes_ = 0;
  uint64_t next_id_ = 1;
};

}  // namespace g4
