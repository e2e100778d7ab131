// WordCache: a per-thread memo of BPE results for short words, internal to Tokenizer. Prose
// repeats its words, and a hash lookup is far cheaper than the merge loop's cache misses in the
// merge table. Encode is const and may run on several threads at once, hence one cache per thread;
// it is emptied when full and when a different tokenizer (serial) uses it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace g4::tokenizer_internal {

class WordCache {
 public:
  static WordCache& ForThread(uint64_t serial) {
    thread_local WordCache cache;
    if (cache.serial_ != serial) {
      cache.Clear();
      cache.serial_ = serial;
    }
    return cache;
  }
  static constexpr size_t kMaxWordBytes = 48;

  // Appends the cached ids of `word` to *ids and returns true, or returns false.
  bool Lookup(std::string_view word, std::vector<int32_t>* ids) const {
    const auto it = map_.find(word);
    if (it == map_.end()) return false;
    ids->insert(ids->end(), ids_.begin() + it->second.first,
                ids_.begin() + it->second.first + it->second.second);
    return true;
  }
  void Insert(std::string_view word, const int32_t* ids, size_t n) {
    if (map_.size() >= kMaxEntries) Clear();
    map_.emplace(std::string(word), std::make_pair(static_cast<uint32_t>(ids_.size()),
                                                   static_cast<uint32_t>(n)));
    ids_.insert(ids_.end(), ids, ids + n);
  }

 private:
  static constexpr size_t kMaxEntries = 1 << 15;
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };
  void Clear() {
    map_.clear();
    ids_.clear();
  }
  uint64_t serial_ = 0;
  std::unordered_map<std::string, std::pair<uint32_t, uint32_t>, Hash, std::equal_to<>> map_;
  std::vector<int32_t> ids_;
};


}  // namespace g4::tokenizer_internal
