// AddedTokenMatcher: finds added tokens (Gemma's <bos>, <|turn>, "\n\n", <unused7>, ...) in raw
// text before any normalisation or BPE, the way Hugging Face tokenizers and transformers.js do:
// scanning left to right, at each position the longest added token that starts there wins
// (leftmost-longest), and the text between matches goes to BPE. Special tokens can be excluded
// so that user text containing "<|turn>" is tokenized as plain text when the caller asks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace g4 {

class AddedTokenMatcher {
 public:
  // Adds `content` (non-empty) for token `id`. A later Add of the same content replaces it.
  void Add(std::string_view content, int32_t id, bool special);

  struct Match {
    size_t begin = 0;
    size_t length = 0;
    int32_t id = -1;
  };
  // The leftmost-longest match in text[from..], skipping special tokens unless `match_special`.
  // Returns false if there is none.
  bool FindNext(std::string_view text, size_t from, bool match_special, Match* match) const;

  bool empty() const { return nodes_.size() <= 1; }

 private:
  struct Node {
    int32_t id = -1;          // token ending here, or -1
    bool special = false;
    int32_t first_edge = -1;  // into edges_, a singly linked list of children
  };
  struct Edge {
    uint8_t byte;
    int32_t child;
    int32_t next;
  };
  int32_t Child(int32_t node, uint8_t byte) const;

  std::vector<Node> nodes_{Node{}};
  std::vector<Edge> edges_;
  int32_t root_child_[256] = {};  // 0 = none (node 0 is the root, never a child)
};

}  // namespace g4
