// RenderGemma3Chat: Google's Gemma 3 chat_template (tokenizer_config.json of google/gemma-3-*),
// step by step. The template, abridged:
//   {{ bos_token }}
//   first_user_prefix = messages[0].content (or its first part's text) + '\n\n' if it is system
//   for message in the rest:
//     raise unless user at even positions and not user at odd ones
//     '<start_of_turn>' + ('model' if assistant else role) + '\n' + (prefix if loop.first)
//     content | trim, or per part: '<start_of_image>' for image, text | trim for text
//     '<end_of_turn>\n'
//   '<start_of_turn>model\n' if add_generation_prompt
// tests/chat/gemma3_chat_template_test.cc renders the same cases with Python Jinja.
#include "chat/chat_gemma3.h"

#include "chat/tool_syntax.h"

namespace g4 {
namespace {

using json = nlohmann::json;

constexpr const char* kBos = "<bos>";
constexpr const char* kStartOfTurn = "<start_of_turn>";
constexpr const char* kEndOfTurn = "<end_of_turn>\n";
constexpr const char* kStartOfImage = "<start_of_image>";

// A developer message is the OpenAI name of a system message (the template knows only "system").
std::string Role(const json& m) {
  const auto it = m.find("role");
  const std::string role = it != m.end() && it->is_string() ? it->get<std::string>() : "";
  return role == "developer" ? "system" : role;
}

bool HasToolCalls(const json& m) {
  const auto it = m.find("tool_calls");
  return it != m.end() && !it->is_null() && !(it->is_array() && it->empty());
}

// The system text the template puts in front of the first user turn: the string content, or the
// text of its first part (not trimmed, as the template does not trim it).
StatusOr<std::string> SystemText(const json& m) {
  const auto c = m.find("content");
  if (c != m.end() && c->is_string()) return c->get<std::string>();
  if (c != m.end() && c->is_array() && !c->empty() && (*c)[0].is_object()) {
    const auto t = (*c)[0].find("text");
    if (t != (*c)[0].end() && t->is_string()) return t->get<std::string>();
  }
  return InvalidArgument(
      "messages[0].content must be a string or an array whose first part has a \"text\" string "
      "(Gemma 3's template prepends it to the first user turn)");
}

// Appends a user/model turn's content: a string trimmed; parts as the template renders them.
// Absent content renders nothing (the template iterates an undefined value); null is refused.
Status AppendContent(const json& m, const std::string& where, std::string* out) {
  const auto c = m.find("content");
  if (c == m.end()) return Status::Ok();
  if (c->is_string()) {
    *out += tool_syntax::Trim(c->get_ref<const std::string&>());
    return Status::Ok();
  }
  if (!c->is_array()) {
    return InvalidArgument(where + ".content must be a string or an array of parts (found " +
                           c->type_name() + ")");
  }
  for (size_t i = 0; i < c->size(); ++i) {
    const json& part = (*c)[i];
    const auto type = part.is_object() ? part.find("type") : part.end();
    const std::string t =
        part.is_object() && type != part.end() && type->is_string() ? type->get<std::string>() : "";
    if (t == "text") {
      const auto text = part.find("text");
      if (text != part.end() && !text->is_null() && !text->is_string()) {
        return InvalidArgument(where + ".content[" + std::to_string(i) +
                               "].text must be a string");
      }
      if (text != part.end() && text->is_string()) {
        *out += tool_syntax::Trim(text->get_ref<const std::string&>());
      }
    } else if (t == "image" || t == "image_url") {
      *out += kStartOfImage;
    } else {
      return InvalidArgument(where + ".content[" + std::to_string(i) + "] has type '" + t +
                             "' (Gemma 3 takes text and image parts)");
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::string> RenderGemma3Chat(const json& messages, const json& tools,
                                       const ChatOptions& options) {
  if (!messages.is_array()) return InvalidArgument("messages must be an array");
  // The template reads messages[0] unconditionally (and raises on an empty list).
  if (messages.empty()) return InvalidArgument("messages is empty");
  if (!tools.is_null() && !tools.is_array()) return InvalidArgument("tools must be an array");
  if (tools.is_array() && !tools.empty()) {
    return InvalidArgument("tools: Gemma 3's chat format has no tool syntax; send the request "
                           "without tools");
  }
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!messages[i].is_object()) return InvalidArgument(where + " is not an object");
    const std::string role = Role(messages[i]);
    if (role == "tool") {
      return InvalidArgument(where + ": role 'tool' is not supported: Gemma 3's chat format has "
                             "no tool syntax");
    }
    if (role != "system" && role != "user" && role != "assistant") {
      return InvalidArgument(where + ".role is '" + role +
                             "' (expected system, developer, user or assistant)");
    }
    if (HasToolCalls(messages[i])) {
      return InvalidArgument(where + ".tool_calls: Gemma 3's chat format has no tool syntax");
    }
  }

  std::string out = kBos;
  std::string first_user_prefix;
  size_t first = 0;
  if (!messages.empty() && Role(messages[0]) == "system") {
    G4_ASSIGN_OR_RETURN(first_user_prefix, SystemText(messages[0]));
    first_user_prefix += "\n\n";
    first = 1;
  }
  for (size_t i = first; i < messages.size(); ++i) {
    const json& m = messages[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    const std::string role = Role(m);
    if ((role == "user") != ((i - first) % 2 == 0)) {
      return InvalidArgument(where + " has role '" + role +
                             "' where Gemma 3's chat template expects " +
                             ((i - first) % 2 == 0 ? "a user" : "an assistant") +
                             " message: conversation roles must alternate "
                             "user/assistant/user/assistant/...");
    }
    const auto content = m.find("content");
    if (content != m.end() && content->is_null()) {
      return InvalidArgument(where + ".content is null (Gemma 3's chat template needs a string or "
                             "an array of parts)");
    }
    out += kStartOfTurn;
    out += role == "assistant" ? "model" : role;
    out += '\n';
    if (i == first) out += first_user_prefix;
    G4_RETURN_IF_ERROR(AppendContent(m, where, &out));
    out += kEndOfTurn;
  }
  if (options.add_generation_prompt) {
    out += kStartOfTurn;
    out += "model\n";
  }
  return out;
}

}  // namespace g4
