// AddedTokenMatcher: a byte trie. The root's children sit in a 256-entry table, so ordinary text
// (whose bytes start no added token) costs one table lookup per byte.
#include "tokenizer/added_tokens.h"

namespace g4 {

int32_t AddedTokenMatcher::Child(int32_t node, uint8_t byte) const {
  if (node == 0) return root_child_[byte] ? root_child_[byte] : -1;
  for (int32_t e = nodes_[node].first_edge; e >= 0; e = edges_[e].next) {
    if (edges_[e].byte == byte) return edges_[e].child;
  }
  return -1;
}

void AddedTokenMatcher::Add(std::string_view content, int32_t id, bool special) {
  int32_t node = 0;
  for (const char ch : content) {
    const uint8_t b = static_cast<uint8_t>(ch);
    int32_t child = Child(node, b);
    if (child < 0) {
      child = static_cast<int32_t>(nodes_.size());
      nodes_.push_back(Node{});
      if (node == 0) {
        root_child_[b] = child;
      } else {
        edges_.push_back(Edge{b, child, nodes_[node].first_edge});
        nodes_[node].first_edge = static_cast<int32_t>(edges_.size()) - 1;
      }
    }
    node = child;
  }
  nodes_[node].id = id;
  nodes_[node].special = special;
}

bool AddedTokenMatcher::FindNext(std::string_view text, size_t from, bool match_special,
                                 Match* match) const {
  const auto* p = reinterpret_cast<const uint8_t*>(text.data());
  const size_t n = text.size();
  for (size_t i = from; i < n; ++i) {
    int32_t node = root_child_[p[i]];
    if (node == 0) continue;
    int32_t best_id = -1;
    size_t best_len = 0;
    size_t j = i;
    while (true) {
      ++j;
      const Node& nd = nodes_[node];
      if (nd.id >= 0 && (match_special || !nd.special)) {
        best_id = nd.id;
        best_len = j - i;
      }
      if (j >= n) break;
      node = Child(node, p[j]);
      if (node < 0) break;
    }
    if (best_id >= 0) {
      *match = Match{i, best_len, best_id};
      return true;
    }
  }
  return false;
}

}  // namespace g4
