// PieceTable: the id <-> piece (token string) tables of a vocabulary, stored as one byte arena
// plus offsets, with an open-addressing hash index for piece -> id. A std::unordered_map of
// 262,144 std::strings costs a heap allocation per long piece and most of a load's time; this
// costs two allocations. When two ids share a piece, lookup returns the one added last (the
// behaviour of Hugging Face tokenizers, whose vocab map keeps the last duplicate key).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace g4 {

class PieceTable {
 public:
  // Ids must be in [0, num_ids); ids never added have no piece (Has() is false).
  void Reset(int32_t num_ids, size_t expected_bytes);
  void Add(int32_t id, std::string_view piece);
  // Builds the hash index; call once after the last Add.
  void Finish();

  int32_t size() const { return static_cast<int32_t>(entries_.size()); }
  bool Has(int32_t id) const { return id >= 0 && id < size() && entries_[id].begin != kAbsent; }
  std::string_view Piece(int32_t id) const {
    return {arena_.data() + entries_[id].begin, static_cast<size_t>(entries_[id].length)};
  }
  // The id of `piece`, or -1.
  int32_t Find(std::string_view piece) const { return Find(piece, Hash(piece)); }

  // For batched lookups (loading half a million merges): hash first, Prefetch the slot, and
  // Find with the hash a little later, so the cache misses of several lookups overlap.
  static uint64_t Hash(std::string_view s);
  void Prefetch(uint64_t hash) const { __builtin_prefetch(&slots_[hash & mask_]); }
  int32_t Find(std::string_view piece, uint64_t hash) const;

 private:
  static constexpr uint32_t kAbsent = UINT32_MAX;

  struct Entry {
    uint32_t begin;   // into arena_, kAbsent if the id has no piece
    uint32_t length;
  };
  // A hash slot keeps 32 bits of the hash next to the id, so probing past other pieces rarely
  // touches the arena (the index is far larger than the cache; each miss costs).
  struct Slot {
    int32_t id;  // -1 = empty
    uint32_t tag;
  };

  std::string arena_;
  std::vector<Entry> entries_;
  std::vector<int32_t> order_;  // ids in the order they were added (duplicates: last wins)
  std::vector<Slot> slots_;     // open addressing, linear probing
  uint64_t mask_ = 0;
};

}  // namespace g4
