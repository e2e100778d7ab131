#include "server/reasoning_stream.h"

namespace g4 {
namespace {
constexpr std::string_view kOpen = "<|channel>";
constexpr std::string_view kClose = "<channel|>";
constexpr std::string_view kHeader = "thought\n";
}  // namespace

void ReasoningSplitter::Feed(std::string_view piece, std::string* content, std::string* reasoning) {
  while (!piece.empty()) {
    if (!in_thought_) {
      const size_t open = piece.find(kOpen);
      content->append(piece.substr(0, open));
      if (open == std::string_view::npos) return;
      piece.remove_prefix(open + kOpen.size());
      in_thought_ = true;
      header_seen_ = 0;
      continue;
    }
    // The header arrives as its own tokens ("thought", "\n"): drop it however it is split.
    while (header_seen_ >= 0 && !piece.empty()) {
      if (piece.front() != kHeader[static_cast<size_t>(header_seen_)]) {
        reasoning->append(kHeader.substr(0, static_cast<size_t>(header_seen_)));  // not a header
        header_seen_ = -1;
        break;
      }
      piece.remove_prefix(1);
      if (++header_seen_ == static_cast<int>(kHeader.size())) header_seen_ = -1;
    }
    const size_t close = piece.find(kClose);
    reasoning->append(piece.substr(0, close));
    if (close == std::string_view::npos) return;
    piece.remove_prefix(close + kClose.size());
    in_thought_ = false;
  }
}

}  // namespace g4
