// A naive SentencePiece BPE encoder, written the way SentencePiece's bpe_model.cc works rather
// than the way g4 does (no merge list, no heap): control tokens are cut out of the raw text
// (leftmost-longest, when parse_special), spaces become "▁", user-defined pieces are matched
// longest-first in that normalized text and frozen, every other character is a symbol; then the
// adjacent pair whose concatenation is a normal piece with the highest score is merged, leftmost
// on ties, until none is left; symbols that are not pieces become their <0xNN> bytes. O(n²) per
// segment: for tests only. Pieces are given as SentencePiece spells them (runs of "▁", not spaces).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace g4::tokenizer_test {

class SpmReference {
 public:
  // types: llama.cpp's (1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte).
  SpmReference(std::vector<std::string> pieces, std::vector<float> scores,
               std::vector<int32_t> types)
      : pieces_(std::move(pieces)), scores_(std::move(scores)), types_(std::move(types)) {
    for (size_t id = 0; id < pieces_.size(); ++id) {
      ids_[pieces_[id]] = static_cast<int32_t>(id);
      if (pieces_[id].empty()) continue;
      const auto first = static_cast<uint8_t>(pieces_[id][0]);
      if (types_[id] == 3 || types_[id] == 2) controls_[first].push_back(static_cast<int32_t>(id));
      if (types_[id] == 4) user_defined_[first].push_back(static_cast<int32_t>(id));
    }
  }

  std::vector<int32_t> Encode(std::string_view text, bool parse_special) const {
    std::vector<int32_t> out;
    size_t start = 0, i = 0;
    while (parse_special && i < text.size()) {
      const int32_t c = LongestAt(text, i, controls_);
      if (c < 0) {
        ++i;
        continue;
      }
      EncodeSegment(text.substr(start, i - start), &out);
      out.push_back(c);
      i += pieces_[c].size();
      start = i;
    }
    EncodeSegment(text.substr(start), &out);
    return out;
  }

 private:
  struct Symbol {
    std::string text;
    bool frozen;
  };

  // Ids by their first byte.
  using PieceSet = std::vector<int32_t>[256];

  int32_t LongestAt(std::string_view s, size_t at, const PieceSet& set) const {
    int32_t best = -1;
    for (const int32_t id : set[static_cast<uint8_t>(s[at])]) {
      const std::string& p = pieces_[id];
      if (s.compare(at, p.size(), p) == 0 && (best < 0 || p.size() > pieces_[best].size())) {
        best = id;
      }
    }
    return best;
  }

  // Bytes of the UTF-8 character at `at`, or 1 for an invalid byte (RFC 3629, as utf8.h).
  static size_t CharLength(std::string_view s, size_t at) {
    const auto b = static_cast<uint8_t>(s[at]);
    size_t n = 1;
    if (b >= 0xC2 && b <= 0xDF) {
      n = 2;
    } else if (b >= 0xE0 && b <= 0xEF) {
      n = 3;
    } else if (b >= 0xF0 && b <= 0xF4) {
      n = 4;
    } else {
      return 1;  // ASCII, a stray continuation byte, C0/C1, F5..FF
    }
    if (at + n > s.size()) return 1;
    for (size_t k = 1; k < n; ++k) {
      if ((static_cast<uint8_t>(s[at + k]) & 0xC0) != 0x80) return 1;
    }
    const auto b1 = static_cast<uint8_t>(s[at + 1]);
    if ((b == 0xE0 && b1 < 0xA0) || (b == 0xED && b1 >= 0xA0) || (b == 0xF0 && b1 < 0x90) ||
        (b == 0xF4 && b1 >= 0x90)) {
      return 1;  // overlong, surrogate, above U+10FFFF
    }
    return n;
  }

  void EncodeSegment(std::string_view raw, std::vector<int32_t>* out) const {
    std::string norm;
    for (const char c : raw) {
      if (c == ' ') {
        norm += "\xE2\x96\x81";
      } else {
        norm += c;
      }
    }
    std::vector<Symbol> syms;
    for (size_t i = 0; i < norm.size();) {
      const int32_t u = LongestAt(norm, i, user_defined_);
      if (u >= 0) {
        syms.push_back({pieces_[u], true});
        i += pieces_[u].size();
        continue;
      }
      const size_t n = CharLength(norm, i);
      syms.push_back({norm.substr(i, n), false});
      i += n;
    }
    // Merges never cross a frozen symbol: each run between them is merged on its own.
    for (size_t begin = 0; begin < syms.size();) {
      if (syms[begin].frozen) {
        Emit(syms[begin].text, out);
        ++begin;
        continue;
      }
      size_t end = begin;
      while (end < syms.size() && !syms[end].frozen) ++end;
      std::vector<std::string> run;
      for (size_t k = begin; k < end; ++k) run.push_back(syms[k].text);
      MergeRun(&run);
      for (const std::string& t : run) Emit(t, out);
      begin = end;
    }
  }

  void MergeRun(std::vector<std::string>* run) const {
    // score[k]: the score of merging run[k] and run[k + 1], or NaN when that is not a piece.
    constexpr float kNone = std::numeric_limits<float>::quiet_NaN();
    auto pair_score = [&](size_t k) {
      const auto it = ids_.find((*run)[k] + (*run)[k + 1]);
      return it == ids_.end() || types_[it->second] != 1 ? kNone : scores_[it->second];
    };
    std::vector<float> score;
    for (size_t k = 0; k + 1 < run->size(); ++k) score.push_back(pair_score(k));
    while (true) {
      int best = -1;
      for (size_t k = 0; k < score.size(); ++k) {
        if (std::isnan(score[k])) continue;
        if (best < 0 || score[k] > score[best]) best = static_cast<int>(k);  // leftmost on ties
      }
      if (best < 0) return;
      (*run)[best] += (*run)[best + 1];
      run->erase(run->begin() + best + 1);
      score.erase(score.begin() + best);
      if (static_cast<size_t>(best) < score.size()) score[best] = pair_score(best);
      if (best > 0) score[best - 1] = pair_score(best - 1);
    }
  }

  void Emit(const std::string& symbol, std::vector<int32_t>* out) const {
    const auto it = ids_.find(symbol);
    if (it != ids_.end()) {
      out->push_back(it->second);
      return;
    }
    for (const char c : symbol) {
      char name[8];
      std::snprintf(name, sizeof(name), "<0x%02X>", static_cast<uint8_t>(c));
      out->push_back(ids_.at(name));
    }
  }

  std::vector<std::string> pieces_;
  std::vector<float> scores_;
  std::vector<int32_t> types_;
  std::unordered_map<std::string, int32_t> ids_;
  PieceSet controls_;
  PieceSet user_defined_;
};

}  // namespace g4::tokenizer_test
