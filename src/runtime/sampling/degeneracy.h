// Degeneracy check: flags a generation whose tail has fallen into a token loop, the failure
// of a broken kernel or an over-greedy decode ("The The The The", a sentence repeated
// forever). It looks at ids only, incrementally: each Push() costs O(max_ngram) and memory is
// O(max_ngram), whatever the length of the generation. Feed it the generated ids only: a
// prompt that repeats itself is the user's text, and `start` indexes the generated ids.
//
// Two rules, both on the tail of the generated ids:
//   - a run of one id at least `max_token_run` long, or `max_word_run` when the id is a word
//     (DegeneracyOptions::is_word, the tokenizer's: letters only, after leading spaces);
//   - a block of n ids (2 <= n <= max_ngram) repeated back to back, the repetition covering at
//     least max(min_ngram_span, min_ngram_repeats * n) tokens.
// A loop is reported under its shortest period (a run of one id is not also called a 2-gram),
// and `start` is where the periodic tail begins: the first token of the first copy.
//
// Why these defaults (Gemma's tokenizer splits digits and has single tokens for runs of
// spaces and of newlines, so indentation and blank lines are one or two ids, not long runs):
//   max_token_run = 32: long enough for legitimate runs of one id, mostly digits: a 64-bit
//     hex zero "0x0000000000000000" is 16 "0" tokens, "1e-20" written out ~20, a blank line
//     run or an 8-token whitespace run is far below. A stuck model repeats forever, so waiting
//     for 32 instead of 16 costs 16 tokens once. Still trips on 128-bit and longer literals
//     of one repeated digit (e.g. the 40-zero Ethereum null address): a known false positive.
//   max_word_run = 16: a word token said 16 times in a row (" The The The ...", Gemma 3 270M's
//     answer to "The capital of France is" without BOS) is never prose; runs of one id that are
//     legitimate are digits, spaces and punctuation, which keep the longer limit.
//   min_ngram_span = 48: legitimate short patterns do repeat back to back for a while: a
//     markdown separator "|---|---|..." of 20 columns is 40 tokens of period 2, "0, 0, 0, ..."
//     in an array initialiser row is similar. 48 tokens of a 2..12-token pattern with no
//     variation at all is not prose, a list or code one writes by hand.
//   min_ngram_repeats = 4: for long blocks (n > 12) the span alone would accept 3 copies; a
//     phrase or line said three times in a row is legitimate (lyrics, emphasis, repeated code
//     lines), four identical copies back to back is a loop.
//   max_ngram = 32: LLM loops are often a whole sentence or line (15-30 tokens); a 32-token
//     block needs 128 tokens to trip, and the per-token cost stays 32 compares.
// Legitimate structure does not trip because the repetition is never exact: numbered lists
// change the number, table rows change their cells, indented code changes the content after
// the (repeated) indentation token.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"

namespace g4 {

struct DegeneracyOptions {
  int max_token_run = 32;      // a run of one id this long trips
  int max_word_run = 16;       // ... or this long when the id is a word (is_word)
  int max_ngram = 32;          // longest repeated block checked (1 = runs only)
  int min_ngram_repeats = 4;   // back-to-back copies a block needs
  int min_ngram_span = 48;     // tokens a repeated block must cover
  // Whether an id spells a word (Tokenizer::IsWordToken); unset: every id gets max_token_run.
  std::function<bool(int32_t)> is_word;

  // InvalidArgument naming the field when a value is out of range.
  Status Validate() const;
};

struct DegeneracyVerdict {
  bool degenerate = false;
  // e.g. "token 464 repeated 32 times" or "4-gram [10, 11, 12, 13] repeated 12 times".
  std::string reason;
  int64_t start = -1;  // index in the generated sequence where the loop began
  int period = 0;      // 1 for a run of one id, n for an n-gram
  int64_t span = 0;    // tokens the loop covered when it tripped
};

class DegeneracyDetector {
 public:
  // Options outside Validate()'s ranges are clamped to the nearest valid value.
  explicit DegeneracyDetector(DegeneracyOptions options = {});

  // Appends one generated token. Once tripped, the verdict is kept as it was at the trip
  // (generation usually stops there; later tokens do not move `start`).
  void Push(int32_t token);
  void Reset();

  const DegeneracyVerdict& verdict() const { return verdict_; }
  bool tripped() const { return verdict_.degenerate; }
  int64_t size() const { return count_; }  // tokens pushed
  const DegeneracyOptions& options() const { return options_; }

 private:
  void Check();
  void Trip(int period, int64_t span);

  DegeneracyOptions options_;
  std::vector<int32_t> ring_;     // the last max_ngram tokens, token i at ring_[i % size]
  std::vector<int64_t> matches_;  // matches_[p]: trailing tokens equal to the one p before
  int64_t count_ = 0;
  DegeneracyVerdict verdict_;
};

// The verdict for a whole generated sequence (pushes every id into a fresh detector).
DegeneracyVerdict CheckDegeneracy(std::span<const int32_t> generated,
                                  const DegeneracyOptions& options = {});

}  // namespace g4
