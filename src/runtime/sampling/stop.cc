// StopChecker: see stop.h for the vLLM/OpenAI stop semantics it implements.
#include "runtime/sampling/stop.h"

#include <algorithm>
#include <utility>

namespace g4 {

StopChecker::StopChecker(std::vector<int32_t> stop_ids, std::vector<std::string> stop_strings,
                         bool ignore_eos)
    : stop_ids_(std::move(stop_ids)), ignore_eos_(ignore_eos) {
  for (std::string& s : stop_strings) {
    if (!s.empty()) stop_strings_.push_back(std::move(s));
  }
}

StopResult StopChecker::Feed(int32_t token, std::string_view piece) {
  if (stopped_) return {true, "", reason_};

  if (!ignore_eos_ && std::find(stop_ids_.begin(), stop_ids_.end(), token) != stop_ids_.end()) {
    // What was held could only have become a stop string with more text; there is none.
    stopped_ = true;
    reason_ = "stop_id";
    return {true, std::exchange(held_, {}), reason_};
  }

  held_.append(piece);
  // Everything before held_ was emitted because no stop string could start there, so any
  // match lies inside held_; it must end in the new piece, as held_ had none before.
  size_t first = std::string::npos;
  for (const std::string& s : stop_strings_) first = std::min(first, held_.find(s));
  if (first != std::string::npos) {
    stopped_ = true;
    reason_ = "stop_string";
    std::string emit = held_.substr(0, first);
    held_.clear();
    return {true, std::move(emit), reason_};
  }

  const size_t keep = HeldPrefixLength();
  std::string emit = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return {false, std::move(emit), ""};
}

std::string StopChecker::Flush() {
  if (stopped_) return "";
  return std::exchange(held_, {});
}

size_t StopChecker::HeldPrefixLength() const {
  // Stop strings are short, so the quadratic scan per string is a few hundred byte compares.
  const std::string_view held(held_);
  size_t best = 0;
  for (const std::string& s : stop_strings_) {
    for (size_t len = std::min(s.size() - 1, held.size()); len > best; --len) {
      if (held.ends_with(std::string_view(s).substr(0, len))) {
        best = len;
        break;
      }
    }
  }
  return best;
}

}  // namespace g4
