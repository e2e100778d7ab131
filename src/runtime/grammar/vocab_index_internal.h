// VocabIndex's data: each token's symbol string, tries over them for the mask DFS, and the
// "plain string tokens" of each dialect, whose bytes are all accepted as-is inside a string, so
// the mask inside a string needs no walk over them.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/grammar/grammar.h"

namespace g4::grammar {

// Nodes in preorder: a node's subtree is [i, subtree_end[i]), so a rejected symbol skips the
// whole subtree at once and the DFS is a flat loop. Node 0 is the root (no symbol).
struct Trie {
  std::vector<int16_t> sym;
  std::vector<uint16_t> depth;
  std::vector<int32_t> subtree_end;
  std::vector<int32_t> tok_begin;  // tokens ending at node i: toks[tok_begin[i], tok_begin[i+1])
  std::vector<int32_t> toks;
  int max_depth = 0;
};

struct VocabIndex::Impl {
  int32_t vocab_size = 0;
  std::vector<int16_t> syms;        // every token's symbols, concatenated
  std::vector<uint32_t> sym_begin;  // id -> offset (size vocab_size + 1); empty = never allowed
  Trie all;                         // every allowed token
  // Per Dialect: 1 for plain tokens; plain ids sorted by code-point count, with
  // plain_upto[c] = how many of them have at most c code points (c <= max_plain_cp).
  struct Plain {
    std::vector<uint8_t> mask;
    std::vector<int32_t> by_cp;
    std::vector<int32_t> upto;
    int max_cp = 0;
    Trie rest;  // every allowed token that is not plain
  } plain[2];
};

}  // namespace g4::grammar
