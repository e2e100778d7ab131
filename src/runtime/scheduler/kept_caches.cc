#include "runtime/scheduler/kept_caches.h"

#include <algorithm>
#include <iterator>

#include "core/log.h"

namespace g4 {
namespace {

// How many leading ids a and b share.
size_t CommonPrefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

}  // namespace

KeptCache* KeptCaches::Find(uint64_t id) {
  for (KeptCache& k : kept_) {
    if (k.id == id) return &k;
  }
  return nullptr;
}

ResumePlan KeptCaches::Plan(const std::vector<int32_t>& prompt) {
  ResumePlan plan;
  if (prompt.empty()) return plan;
  const size_t P = prompt.size();
  size_t best = kept_.size(), best_len = 0, branch = 0;
  for (size_t i = 0; i < kept_.size(); ++i) {
    const KeptCache& r = kept_[i];
    if (r.claimed) continue;  // gone by the time this plan is carried out
    const size_t shared = CommonPrefix(r.ids, prompt);
    const size_t size = static_cast<size_t>(r.cache->size());
    // Without the prompt's last logits at least its last token must run.
    const size_t limit = std::min(shared, P - 1);
    size_t usable = 0;
    if (r.snapshot && r.snapshot->size() == static_cast<int32_t>(P) && shared >= P) {
      usable = P;  // the same prompt again: its snapshot and logits
    } else if (limit >= size) {
      usable = size;  // the prompt goes on from where the cache ends: continue in place
    } else if (r.cache->CanTruncate(static_cast<int32_t>(limit))) {
      usable = limit;  // full layers, and rings that have not wrapped, keep any prefix
    } else {
      for (const KvSnapshot* s : {r.snapshot.get(), r.branch.get()}) {
        if (s != nullptr && static_cast<size_t>(s->size()) <= limit) {
          usable = std::max(usable, static_cast<size_t>(s->size()));
        }
      }
    }
    if (limit < size) branch = std::max(branch, limit);  // the prompt leaves it part way in
    if (usable > best_len) {
      best = i;
      best_len = usable;
    }
  }
  if (branch > best_len && best_len < P) plan.branch = static_cast<int32_t>(branch);
  if (best == kept_.size()) return plan;
  KeptCache& kept = kept_[best];
  plan.kept = kept.id;
  plan.len = static_cast<int32_t>(best_len);
  plan.same_prompt = best_len == P;
  // The prompt goes on from the whole cache: it takes the cache over (what it keeps when it
  // finishes holds all of this one), unless branches hold blocks through it.
  plan.take_over = plan.len == kept.cache->size() && kept.pins == 0;
  if (plan.take_over) {
    kept.claimed = true;
  } else {
    ++kept.pins;
    plan.shared_bytes = kept.cache->SharedBytes(plan.len);
  }
  return plan;
}

void KeptCaches::Release(const ResumePlan& plan) {
  KeptCache* kept = plan.kept ? Find(plan.kept) : nullptr;
  if (kept == nullptr) return;
  if (plan.take_over) {
    kept->claimed = false;
  } else {
    --kept->pins;
  }
}

void KeptCaches::Unpin(uint64_t id) {
  if (KeptCache* kept = Find(id)) --kept->pins;
}

Resumed KeptCaches::Take(const ResumePlan& plan) {
  Resumed out;
  out.branch = plan.branch;
  if (plan.kept == 0) return out;
  auto it = std::find_if(kept_.begin(), kept_.end(),
                         [&](const KeptCache& k) { return k.id == plan.kept; });
  if (it == kept_.end()) return Resumed{};  // not reached: a plan's cache stays until Take
  if (plan.take_over) {
    KeptCache r = std::move(*it);
    kept_.erase(it);
    Recount();
    out.cache = std::move(r.cache);
    out.branch_snapshot = std::move(r.branch);
    if (plan.same_prompt) {  // the state at the prompt's end stays this sequence's snapshot
      out.snapshot = std::move(r.snapshot);
      out.logits = std::move(r.logits);
    }
  } else {
    // It leaves part way in: a copy of the prefix's state (the full layers share its blocks);
    // the kept cache stays for the next prompt (requests sharing a system prompt, running
    // together or not).
    const KvSnapshot* at = nullptr;
    for (const KvSnapshot* s : {it->snapshot.get(), it->branch.get()}) {
      if (s != nullptr && s->size() == plan.len) at = s;
    }
    auto copy = it->cache->Clone(plan.len, at);
    if (!copy.ok()) {
      LogWarning("prefix reuse: " + copy.status().ToString() + "; starting from an empty cache");
      --it->pins;
      return Resumed{};
    }
    out.cache = std::move(*copy);
    if (plan.same_prompt) out.logits = it->logits;
    if (plan.shared_bytes > 0) {
      out.pinned = plan.kept;
      out.shared_bytes = plan.shared_bytes;
    } else {
      --it->pins;  // nothing shared to keep counted
    }
    std::rotate(kept_.begin(), it, it + 1);  // most recently used
  }
  out.cached = plan.len;
  return out;
}

void KeptCaches::Keep(KeptCache r) {
  for (auto it = kept_.begin(); it != kept_.end();) {
    if (it->pins > 0 || it->claimed || it->ids.size() > r.ids.size() ||
        !std::equal(it->ids.begin(), it->ids.end(), r.ids.begin())) {
      ++it;
      continue;
    }
    // A ring's state at q depends only on the tokens before q: its snapshots are r's.
    if (!r.snapshot && it->snapshot) {
      r.snapshot = std::move(it->snapshot);
      r.logits = std::move(it->logits);
    }
    if (!r.branch && it->branch) r.branch = std::move(it->branch);
    it = kept_.erase(it);
  }
  r.id = next_id_++;
  r.pins = 0;
  r.claimed = false;
  kept_.push_front(std::move(r));
  Recount();
}

void KeptCaches::EvictTo(size_t limit) {
  while (bytes_ > limit) {
    auto it = std::find_if(kept_.rbegin(), kept_.rend(),
                           [](const KeptCache& k) { return k.pins == 0 && !k.claimed; });
    if (it == kept_.rend()) return;
    kept_.erase(std::next(it).base());
    Recount();  // what it shared with the others stays
  }
}

void KeptCaches::Recount() {
  KvBlockSet seen;
  bytes_ = 0;
  for (const KeptCache& k : kept_) {
    bytes_ += k.cache->UnseenBytes(&seen) + (k.snapshot ? k.snapshot->bytes() : 0) +
              (k.branch ? k.branch->bytes() : 0) + k.logits.size() * sizeof(float);
  }
}

void KeptCaches::Clear() {
  kept_.clear();
  bytes_ = 0;
}

}  // namespace g4
