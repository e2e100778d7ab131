// ReasoningSplitter: splits streamed model text into reasoning and content as it arrives, the
// streaming twin of ParseModelOutput (chat/chat.h). Gemma 4 writes its thoughts as
// "<|channel>thought\n ... <channel|>"; both markers are single tokens rendered as text, so a
// marker never straddles two pieces.
#pragma once

#include <string>
#include <string_view>

namespace g4 {

class ReasoningSplitter {
 public:
  // Appends the parts of `piece` to *content and *reasoning.
  void Feed(std::string_view piece, std::string* content, std::string* reasoning);

 private:
  bool in_thought_ = false;
  // Bytes of the "thought\n" header seen since the opener (it is not reasoning text); -1 once
  // the header is done or turned out to be absent.
  int header_seen_ = -1;
};

}  // namespace g4
