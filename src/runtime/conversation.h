// Conversation: the messages of a multi-turn chat (OpenAI format) and the prompt each turn sends,
// rendered by the model's chat template (chat/chat.h): turn n's prompt is the system
// message, turns 1..n-1 with their answers, and the new user message, so the model sees the
// whole history every turn. Used by `g4 chat`.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/chat.h"
#include "core/status.h"

namespace g4 {

class Conversation {
 public:
  explicit Conversation(ChatOptions options) : options_(std::move(options)) {}

  // A new system message starts a new conversation (the turns are cleared); "" removes it.
  void SetSystem(std::string text);
  // Forgets the turns; the system message stays.
  void Reset() { turns_.clear(); }
  void AddUser(std::string text) { turns_.push_back({"user", std::move(text)}); }
  void AddAssistant(std::string text) { turns_.push_back({"assistant", std::move(text)}); }
  // Removes the last message (a user turn whose answer could not be generated).
  void PopLast() {
    if (!turns_.empty()) turns_.pop_back();
  }

  const std::string& system() const { return system_; }
  size_t size() const { return turns_.size(); }

  // [{"role": "system", "content": ...}?, {"role": "user", ...}, {"role": "assistant", ...}, ...]
  nlohmann::json Messages() const;
  // The prompt text of the messages with the generation prompt (RenderChat's errors, e.g. a
  // model without a chat template).
  StatusOr<std::string> Prompt() const;
  // Messages() as a JSON file (2-space indent); IoError naming the path.
  Status Save(const std::string& path) const;

 private:
  struct Message {
    std::string role, content;
  };
  ChatOptions options_;
  std::string system_;
  std::vector<Message> turns_;
};

}  // namespace g4
