// StreamDecoder: append the token's bytes, emit the longest prefix that does not end inside a
// character the next bytes could still complete (utf8::CompletePrefix).
#include "tokenizer/stream_decoder.h"

#include "tokenizer/utf8.h"

namespace g4 {

StatusOr<std::string> StreamDecoder::Push(int32_t id) {
  const size_t before = pending_.size();
  const Status s = tokenizer_.AppendDecoded(id, options_, &pending_);
  if (!s.ok()) {
    pending_.resize(before);
    return s;
  }
  const size_t n = utf8::CompletePrefix(pending_);
  std::string out = pending_.substr(0, n);
  pending_.erase(0, n);
  return out;
}

std::string StreamDecoder::Finish() {
  std::string out;
  out.swap(pending_);
  return out;
}

}  // namespace g4
