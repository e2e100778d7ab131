// The BPE merge list equivalent to a SentencePiece BPE vocabulary's scores.
//
// SentencePiece BPE (and llama.cpp's "llama" tokenizer) has no merge list: it repeatedly merges
// the adjacent pair whose concatenation is a piece with the highest score. A rank-ordered merge
// list does the same when every split of a piece into two vocabulary pieces is a merge and merges
// are ranked by the merged piece's score. That is how Hugging Face converts SentencePiece models
// (SentencePieceExtractor / generate_merges in transformers' convert_slow_tokenizer.py), and the
// order below is exactly theirs, so the list equals the `merges` of the tokenizer.json Hugging
// Face made from the same model (tested on Gemma 3's 514,906 merges):
//   1. higher score of the merged piece first;
//   2. then the longer left part (in code points), then the longer right part;
//   3. then the merged piece's lower id.
// Rule 2 is where Hugging Face and SentencePiece can part: two different splits of one piece
// have equal scores, and SentencePiece takes the leftmost pair on ties. They give different ids
// only when two such splits overlap in one word (docs/tokenizer.md).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

namespace g4 {

using MergeList = std::vector<std::pair<std::string_view, std::string_view>>;

// `pieces[id]` and `scores[id]` (finite) for every id; merges are derived for the ids where
// `mergeable[id]` is non-zero, and their two parts may be any non-empty piece. A piece that
// occurs twice is indexed by its later id (as tokenizers' vocab map keeps the later duplicate).
// Splits fall between UTF-8 characters (never before a continuation byte), as Python splits a
// str. The returned views point into `pieces`' strings.
MergeList DeriveSpmMerges(std::span<const std::string_view> pieces, std::span<const float> scores,
                          std::span<const uint8_t> mergeable);

}  // namespace g4
