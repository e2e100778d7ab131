// DeriveSpmMerges: every split of every mergeable piece, looked up in a hash index of all pieces,
// produced directly in Hugging Face's order (spm_merges.h).
#include "tokenizer/spm_merges.h"

#include <algorithm>
#include <cstring>

#include "tokenizer/piece_table.h"

namespace g4 {
namespace {

bool IsContinuationByte(char c) { return (static_cast<uint8_t>(c) & 0xC0) == 0x80; }

// An order-preserving map of finite floats to integers, -0.0 and 0.0 alike (as Python compares
// them: Gemma's best piece scores -0.0, its user-defined ones 0).
uint32_t OrderedBits(float f) {
  f += 0.0f;  // -0.0 -> 0.0
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  return (bits & 0x80000000u) ? ~bits : bits | 0x80000000u;
}

struct Split {
  uint32_t score;  // OrderedBits
  uint32_t left_chars;
  uint32_t right_chars;
  int32_t id;
  uint32_t at;  // byte offset of the split
};

// Hugging Face's order among merges of equal score: longer left part, longer right part, then
// the lower piece id (its stable sort over pieces in id order). Two splits of one piece never tie:
// their left parts differ in length.
bool BeforeAtEqualScore(const Split& a, const Split& b) {
  if (a.left_chars != b.left_chars) return a.left_chars > b.left_chars;
  if (a.right_chars != b.right_chars) return a.right_chars > b.right_chars;
  return a.id < b.id;
}

}  // namespace

MergeList DeriveSpmMerges(std::span<const std::string_view> pieces, std::span<const float> scores,
                          std::span<const uint8_t> mergeable) {
  const int32_t n = static_cast<int32_t>(pieces.size());
  PieceTable index;
  size_t bytes = 0;
  for (const std::string_view p : pieces) bytes += p.size();
  index.Reset(n, bytes);
  for (int32_t id = 0; id < n; ++id) {
    if (!pieces[id].empty()) index.Add(id, pieces[id]);
  }
  index.Finish();

  // The pieces to split, by descending score then id: splits come out (almost) sorted, and only
  // runs of equal score need sorting (a full sort of 515k merges costs more than all the lookups).
  std::vector<uint64_t> order;
  order.reserve(pieces.size());
  for (int32_t id = 0; id < n; ++id) {
    const std::string_view p = pieces[id];
    if (!mergeable[id] || p.size() < 2) continue;
    if (index.Find(p) != id) continue;  // an earlier duplicate: the later id speaks for it
    order.push_back((static_cast<uint64_t>(~OrderedBits(scores[id])) << 32) |
                    static_cast<uint32_t>(id));
  }
  std::sort(order.begin(), order.end());

  // Every split needs one or two lookups in an index far larger than the cache. They are done in
  // blocks: hash and prefetch a block's suffixes, look them up, then the same for the prefixes of
  // the splits whose suffix is a piece (most prefixes are pieces, most suffixes are not), so the
  // cache misses of a block overlap.
  struct Pending {
    Split split;
    uint64_t hash;
  };
  constexpr size_t kBlock = 64;
  std::vector<Pending> block, found;
  block.reserve(kBlock);
  found.reserve(kBlock);
  std::vector<Split> splits;
  splits.reserve(pieces.size() * 2);
  auto flush = [&] {
    found.clear();
    for (Pending& b : block) {
      const std::string_view p = pieces[b.split.id];
      if (index.Find(p.substr(b.split.at), b.hash) < 0) continue;
      b.hash = PieceTable::Hash(p.substr(0, b.split.at));
      index.Prefetch(b.hash);
      found.push_back(b);
    }
    for (const Pending& f : found) {
      const std::string_view p = pieces[f.split.id];
      if (index.Find(p.substr(0, f.split.at), f.hash) >= 0) splits.push_back(f.split);
    }
    block.clear();
  };
  for (const uint64_t key : order) {
    const int32_t id = static_cast<int32_t>(static_cast<uint32_t>(key));
    const std::string_view p = pieces[id];
    uint32_t chars = 0;
    for (const char c : p) chars += IsContinuationByte(c) ? 0 : 1;
    uint32_t left_chars = chars;
    for (size_t k = p.size() - 1; k > 0; --k) {  // the longer left part first
      if (IsContinuationByte(p[k])) continue;
      --left_chars;
      const uint64_t h = PieceTable::Hash(p.substr(k));
      index.Prefetch(h);
      block.push_back(Pending{Split{static_cast<uint32_t>(~(key >> 32)), left_chars,
                                    chars - left_chars, id, static_cast<uint32_t>(k)},
                              h});
      if (block.size() == kBlock) flush();
    }
  }
  flush();

  for (size_t begin = 0; begin < splits.size();) {
    size_t end = begin + 1;
    bool several_pieces = false;
    while (end < splits.size() && splits[end].score == splits[begin].score) {
      several_pieces = several_pieces || splits[end].id != splits[begin].id;
      ++end;
    }
    if (several_pieces) {
      std::sort(splits.begin() + static_cast<std::ptrdiff_t>(begin),
                splits.begin() + static_cast<std::ptrdiff_t>(end), BeforeAtEqualScore);
    }
    begin = end;
  }

  MergeList merges;
  merges.reserve(splits.size());
  for (const Split& s : splits) {
    const std::string_view p = pieces[s.id];
    merges.emplace_back(p.substr(0, s.at), p.substr(s.at));
  }
  return merges;
}

}  // namespace g4
