// Stop conditions for streamed generation: stop token ids and stop strings, with the
// semantics of vLLM / the OpenAI API (include_stop_str_in_output = false):
//
// - A stop id (e.g. 1, 106, 50 from the Gemma IT generation_config) ends generation and its
//   own text is not emitted. With ignore_eos the ids do not stop anything and their text is
//   treated as ordinary text (how `g4 generate --ignore-eos` computed the golden
//   continuations); stop strings still apply.
// - A stop string ends generation as soon as the text generated so far contains it, even when
//   it spans several tokens; neither it nor anything after it is emitted. When several stop
//   strings are complete at once, the one starting earliest wins (vLLM takes the first in list
//   order; earliest-start is the order-independent choice and emits the least text).
// - Text that could still be the start of a stop string is held back until the next tokens
//   settle it, so a caller streaming `emit` never shows part of a stop string. Flush() returns
//   what is held when generation ends for another reason (max tokens).
//
// Matching is on bytes. Pieces are UTF-8 (grapheme/partial-character handling is upstream);
// since a valid UTF-8 stop string starts with a lead byte, every cut this class makes in
// valid UTF-8 text falls on a character boundary.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace g4 {

struct StopResult {
  bool stop = false;
  std::string emit;    // text safe to show now (may be empty while a prefix is held)
  std::string reason;  // "stop_id" | "stop_string" when stop, else ""
};

class StopChecker {
 public:
  // Empty stop strings are ignored (they would match before any text).
  StopChecker(std::vector<int32_t> stop_ids, std::vector<std::string> stop_strings,
              bool ignore_eos = false);

  // Feeds one generated token and its decoded piece. After a stop, further calls return
  // {stop = true, emit = "", the same reason}.
  StopResult Feed(int32_t token, std::string_view piece);

  // At the end of generation without a stop: returns the held-back text and clears it.
  // Returns "" after a stop (text after a stop string is never emitted).
  std::string Flush();

  bool stopped() const { return stopped_; }
  // The text currently held back (for tests and diagnostics).
  const std::string& held() const { return held_; }

 private:
  // The longest suffix of held_ that is a proper prefix of some stop string.
  size_t HeldPrefixLength() const;

  std::vector<int32_t> stop_ids_;
  std::vector<std::string> stop_strings_;
  bool ignore_eos_;
  std::string held_;  // text received but not yet emitted
  bool stopped_ = false;
  std::string reason_;
};

}  // namespace g4
