// StreamDecoder: detokenizes one generated token at a time for streaming output. Gemma's byte
// fallback spreads a character over several <0xNN> tokens, so a token's bytes can end inside a
// UTF-8 character; the decoder holds such an unfinished tail back until the next tokens complete
// it. The concatenation of everything Push returns plus Finish equals Decode of all the ids,
// byte for byte: nothing is lost, and no chunk but the last ends inside a character that could
// still be completed. Bytes that can never form a valid character are passed on as soon as that
// is known (utf8::Sanitize them if the channel needs valid UTF-8).
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "tokenizer/tokenizer.h"

namespace g4 {

class StreamDecoder {
 public:
  // `tokenizer` must outlive the decoder.
  StreamDecoder(const Tokenizer& tokenizer, DecodeOptions options)
      : tokenizer_(tokenizer), options_(options) {}

  // Adds one token; returns the text that became complete (possibly empty). InvalidArgument for
  // an id outside the vocabulary (the decoder is unchanged then).
  StatusOr<std::string> Push(int32_t id);
  // Ends the stream: returns what was held back (an unfinished character, as raw bytes).
  std::string Finish();
  // Bytes currently held back.
  size_t pending() const { return pending_.size(); }

 private:
  const Tokenizer& tokenizer_;
  DecodeOptions options_;
  std::string pending_;
};

}  // namespace g4
