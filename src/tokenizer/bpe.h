// BpeModel: Hugging Face's BPE model with byte fallback, as Gemma uses it (formats.md §3.4):
// a word is split into Unicode code points, then the adjacent pair with the lowest merge rank
// (leftmost on ties) is merged repeatedly until no adjacent pair has a rank; pieces that are not
// in the vocabulary become their UTF-8 bytes as <0xNN> tokens. Ties and ranks are exactly those
// of tokenizers / transformers.js. The merge loop is a min-heap of (rank, position) candidates
// over a linked list of symbols with stale-entry checks: O(n log n) in the word length, because a
// Gemma "word" is a whole line (spaces are not split on). Bytes that are not valid UTF-8 are
// symbols of their own that never merge, so they come out as byte tokens.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "tokenizer/piece_table.h"

namespace g4 {

struct BpeOptions {
  bool byte_fallback = true;
  bool fuse_unk = false;
  bool ignore_merges = false;
  int32_t unk_id = -1;  // -1: none
};

class BpeModel {
 public:
  // `pieces` must outlive the model. `merges` are (left, right) piece pairs; rank = index.
  // Every piece of a merge and their concatenation must be in the vocabulary.
  Status Build(const PieceTable* pieces,
               const std::vector<std::pair<std::string_view, std::string_view>>& merges,
               const BpeOptions& options);

  // Appends the ids of one word (already normalised) to *out.
  void Encode(std::string_view word, std::vector<int32_t>* out) const;

  size_t num_merges() const { return merge_result_.size(); }

 private:
  struct Slot {
    uint64_t key;   // (left << 32) | right; kEmpty if unused
    uint32_t rank;
  };
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  static uint64_t PairKey(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  static uint64_t Mix(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return k;
  }
  // The rank of merging (a, b), or UINT32_MAX.
  uint32_t Rank(int32_t a, int32_t b) const {
    const uint64_t key = PairKey(a, b);
    uint64_t i = Mix(key) & mask_;
    while (true) {
      const Slot& s = slots_[i];
      if (s.key == key) return s.rank;
      if (s.key == kEmpty) return UINT32_MAX;
      i = (i + 1) & mask_;
    }
  }
  void EmitUnknown(std::string_view bytes, bool* last_was_unk, std::vector<int32_t>* out) const;

  const PieceTable* pieces_ = nullptr;
  BpeOptions options_;
  std::vector<Slot> slots_;
  uint64_t mask_ = 0;
  std::vector<int32_t> merge_result_;  // by rank
  std::vector<int32_t> code_point_id_;  // code point -> id of the one-character piece, or -1
  int32_t byte_id_[256];               // <0xNN> -> id, or -1
};

}  // namespace g4
