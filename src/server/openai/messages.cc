// ValidateMessages: see messages.h.
#include "server/openai/messages.h"

#include <array>
#include <string>
#include <string_view>

namespace g4::openai {
namespace {

constexpr std::array<std::string_view, 5> kRoles = {"system", "developer", "user", "assistant",
                                                    "tool"};
// Content part types of other modalities (OpenAI's and vLLM's spellings).
constexpr std::array<std::string_view, 10> kMediaParts = {
    "image_url", "image", "input_image", "image_pil", "image_embeds",
    "audio_url", "input_audio", "audio", "video_url", "video"};

ApiError MessagesError(const std::string& message) { return BadRequest(message, "messages"); }

MaybeError ValidateContentPart(const nlohmann::json& part, const std::string& where) {
  if (!part.is_object()) {
    return MessagesError(where + " must be an object, got " + JsonTypePhrase(part));
  }
  const auto type = part.find("type");
  if (type == part.end() || !type->is_string()) {
    return MessagesError(where + ".type must be a string");
  }
  const std::string& kind = type->get_ref<const std::string&>();
  if (kind == "text") {
    const auto text = part.find("text");
    if (text == part.end() || !text->is_string()) {
      return MessagesError(where + ".text must be a string");
    }
    return std::nullopt;
  }
  for (std::string_view media : kMediaParts) {
    if (kind == media) {
      return MessagesError(where + ": content of type \"" + kind +
                           "\" is not supported (this server takes text only)");
    }
  }
  if (kind == "file" || kind == "input_file") {
    return MessagesError(where + ": file content is not supported (this server takes text only)");
  }
  return MessagesError(where + ".type \"" + kind + "\" is not a known content part type");
}

}  // namespace

MaybeError ValidateMessages(const nlohmann::json* messages) {
  if (messages == nullptr) return MessagesError("messages is required");
  if (!messages->is_array()) {
    return MessagesError("messages must be an array, got " + JsonTypePhrase(*messages));
  }
  if (messages->empty()) return MessagesError("messages must not be empty");
  for (size_t i = 0; i < messages->size(); ++i) {
    const nlohmann::json& message = (*messages)[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!message.is_object()) {
      return MessagesError(where + " must be an object, got " + JsonTypePhrase(message));
    }
    const auto role = message.find("role");
    if (role == message.end() || role->is_null()) {
      return MessagesError(where + ".role is required");
    }
    if (!role->is_string()) {
      return MessagesError(where + ".role must be a string, got " + JsonTypePhrase(*role));
    }
    const std::string& name = role->get_ref<const std::string&>();
    bool known = false;
    for (std::string_view r : kRoles) known = known || name == r;
    if (!known) {
      return MessagesError(where + ".role must be one of system, developer, user, assistant, "
                                   "tool; got \"" + name + "\"");
    }
    const auto content = message.find("content");
    if (content == message.end() || content->is_null()) {
      // OpenAI: content is required, except on an assistant message that carries tool_calls.
      const auto calls = message.find("tool_calls");
      const bool has_calls = calls != message.end() && calls->is_array() && !calls->empty();
      if (name == "assistant" && has_calls) continue;
      return BadRequest(where + ".content is required" +
                            (name == "assistant" ? " (or tool_calls)" : std::string()),
                        where + ".content");
    }
    if (content->is_string()) continue;
    if (!content->is_array()) {
      return MessagesError(where + ".content must be a string, null or an array of parts, got " +
                           JsonTypePhrase(*content));
    }
    for (size_t k = 0; k < content->size(); ++k) {
      if (MaybeError e = ValidateContentPart((*content)[k],
                                             where + ".content[" + std::to_string(k) + "]")) {
        return e;
      }
    }
  }
  return std::nullopt;
}

}  // namespace g4::openai
