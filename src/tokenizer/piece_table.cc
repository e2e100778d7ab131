// PieceTable: arena + offsets + linear-probing index keyed on a 64-bit hash of the piece.
#include "tokenizer/piece_table.h"

#include <cstring>

namespace g4 {

void PieceTable::Reset(int32_t num_ids, size_t expected_bytes) {
  arena_.clear();
  arena_.reserve(expected_bytes);
  entries_.assign(static_cast<size_t>(num_ids), Entry{kAbsent, 0});
  order_.clear();
  slots_.clear();
}

void PieceTable::Add(int32_t id, std::string_view piece) {
  entries_[id] = Entry{static_cast<uint32_t>(arena_.size()), static_cast<uint32_t>(piece.size())};
  arena_.append(piece);
  order_.push_back(id);
}

uint64_t PieceTable::Hash(std::string_view s) {
  // FNV-1a over 8-byte words then bytes, finished with a multiply-xorshift mix: pieces are short
  // (a few bytes), so a simple loop beats calling a general-purpose hash.
  uint64_t h = 0xcbf29ce484222325ull ^ s.size();
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    h = (h ^ w) * 0x100000001b3ull;
    h ^= h >> 29;
  }
  for (; i < s.size(); ++i) h = (h ^ static_cast<uint8_t>(s[i])) * 0x100000001b3ull;
  h ^= h >> 32;
  h *= 0xd6e8feb86659fd93ull;
  h ^= h >> 32;
  return h;
}

void PieceTable::Finish() {
  size_t cap = 16;
  while (cap < order_.size() * 2) cap <<= 1;
  slots_.assign(cap, Slot{-1, 0});
  mask_ = cap - 1;
  for (const int32_t id : order_) {
    if (entries_[id].begin == kAbsent) continue;
    const std::string_view piece = Piece(id);
    const uint64_t h = Hash(piece);
    const uint32_t tag = static_cast<uint32_t>(h >> 32);
    uint64_t i = h & mask_;
    while (true) {
      Slot& slot = slots_[i];
      // An empty slot, or the same piece again (a duplicate: the later entry wins).
      if (slot.id < 0 || (slot.tag == tag && Piece(slot.id) == piece)) {
        slot = Slot{id, tag};
        break;
      }
      i = (i + 1) & mask_;
    }
  }
  order_.clear();
  order_.shrink_to_fit();
}

int32_t PieceTable::Find(std::string_view piece, uint64_t h) const {
  if (slots_.empty()) return -1;
  const uint32_t tag = static_cast<uint32_t>(h >> 32);
  uint64_t i = h & mask_;
  while (true) {
    const Slot slot = slots_[i];
    if (slot.id < 0) return -1;
    if (slot.tag == tag) {
      const Entry& e = entries_[slot.id];
      if (e.length == piece.size() &&
          std::memcmp(arena_.data() + e.begin, piece.data(), piece.size()) == 0) {
        return slot.id;
      }
    }
    i = (i + 1) & mask_;
  }
}

}  // namespace g4
