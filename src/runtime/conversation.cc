#include "runtime/conversation.h"

#include <fstream>

namespace g4 {

void Conversation::SetSystem(std::string text) {
  system_ = std::move(text);
  turns_.clear();
}

nlohmann::json Conversation::Messages() const {
  nlohmann::json messages = nlohmann::json::array();
  if (!system_.empty()) messages.push_back({{"role", "system"}, {"content", system_}});
  for (const Message& m : turns_) messages.push_back({{"role", m.role}, {"content", m.content}});
  return messages;
}

StatusOr<std::string> Conversation::Prompt() const {
  return RenderChat(Messages(), nlohmann::json(), options_);
}

Status Conversation::Save(const std::string& path) const {
  std::ofstream out(path, std::ios::binary);
  if (!out) return IoError("cannot write " + path);
  // Invalid UTF-8 (a partial answer cut inside a character) becomes U+FFFD, not an exception.
  out << Messages().dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  if (!out.good()) return IoError("cannot write " + path);
  return Status::Ok();
}

}  // namespace g4
