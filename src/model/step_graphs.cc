#include "model/step_graphs.h"

#include <algorithm>

namespace g4 {

StepGraphs::Entry& StepGraphs::Get(int64_t batch, Memory& memory, bool* fresh) {
  ++clock_;
  for (auto& e : entries_) {
    if (e->batch == batch) {
      e->last_use = clock_;
      *fresh = false;
      return *e;
    }
  }
  if (static_cast<int>(entries_.size()) >= std::max(1, max_entries_)) {
    auto oldest = std::min_element(entries_.begin(), entries_.end(), [](const auto& a,
                                                                        const auto& b) {
      return a->last_use < b->last_use;
    });
    entries_.erase(oldest);
  }
  auto e = std::make_unique<Entry>();
  e->batch = batch;
  e->ws = std::make_unique<ForwardWorkspace>(memory);
  e->last_use = clock_;
  entries_.push_back(std::move(e));
  *fresh = true;
  return *entries_.back();
}

}  // namespace g4
