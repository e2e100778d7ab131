// RenderChat: the Gemma 4 chat template (see chat.h) written out in C++. Each step names the part
// of the template it reproduces, since the output must match the template's text exactly. The
// other formats are dispatched to from here (chat_gemma3.h; none is refused).
#include "chat/chat.h"

#include "chat/chat_gemma3.h"
#include "chat/tool_syntax.h"
#include "tokenizer/gemma4_tokens.h"

namespace g4 {
namespace {

using json = nlohmann::json;
using tool_syntax::Trim;

std::string Str(std::string_view s) { return std::string(s); }

enum class Prev { kNone, kToolCall, kToolResponse, kMedia };

bool HasContent(const json& m) {
  const auto it = m.find("content");
  if (it == m.end() || it->is_null()) return false;
  if (it->is_string()) return !it->get_ref<const std::string&>().empty();
  return !it->empty();
}

const json* Field(const json& m, const char* key) {
  const auto it = m.find(key);
  return it == m.end() || it->is_null() ? nullptr : &*it;
}

std::string StringField(const json& m, const char* key) {
  const json* v = Field(m, key);
  return v != nullptr && v->is_string() ? v->get<std::string>() : std::string();
}

// Appends a message's content: text trimmed (assistant text through strip_thinking), media parts
// as their placeholder tokens.
Status AppendContent(const json& m, bool model, const std::string& where, std::string* out,
                     Prev* prev) {
  const json* c = Field(m, "content");
  if (c == nullptr) return Status::Ok();
  auto text = [&](std::string_view t) {
    *out += model ? StripThinking(t) : std::string(Trim(t));
  };
  if (c->is_string()) {
    text(c->get_ref<const std::string&>());
    return Status::Ok();
  }
  if (!c->is_array()) return InvalidArgument(where + ".content must be a string, null or an array");
  for (size_t i = 0; i < c->size(); ++i) {
    const json& part = (*c)[i];
    const std::string type = part.is_object() ? StringField(part, "type") : std::string();
    if (type == "text") {
      text(StringField(part, "text"));
    } else if (type == "image" || type == "image_url") {
      *out += "<|image|>";
      *prev = Prev::kMedia;
    } else if (type == "audio" || type == "input_audio") {
      *out += "<|audio|>";
      *prev = Prev::kMedia;
    } else if (type == "video") {
      *out += "<|video|>";
      *prev = Prev::kMedia;
    } else {
      return InvalidArgument(where + ".content[" + std::to_string(i) + "] has type '" + type +
                             "' (expected text, image, audio or video)");
    }
  }
  return Status::Ok();
}

// The text of a content value (string, or the text parts of an array joined), for the system
// turn and tool results.
std::string PlainText(const json* c) {
  if (c == nullptr) return "";
  if (c->is_string()) return c->get<std::string>();
  std::string s;
  if (c->is_array()) {
    for (const json& part : *c) {
      if (part.is_object() && StringField(part, "type") == "text") s += StringField(part, "text");
    }
  }
  return s;
}

// "<|tool_call>call:NAME{...}<tool_call|>". OpenAI sends arguments as a JSON string; like vLLM
// and llama.cpp we parse it so the template's object branch (sorted key:value) applies; a string
// that is not a JSON object is inserted verbatim (the template's string branch).
Status AppendToolCall(const json& call, const std::string& where, std::string* out) {
  const json* fn = call.is_object() ? Field(call, "function") : nullptr;
  if (fn == nullptr || !fn->is_object()) return InvalidArgument(where + " has no \"function\"");
  *out += Str(gemma4::kToolCallStart) + "call:" + StringField(*fn, "name") + "{";
  const json* args = Field(*fn, "arguments");
  json parsed;
  if (args != nullptr && args->is_string()) {
    parsed = json::parse(args->get<std::string>(), nullptr, /*allow_exceptions=*/false);
    if (!parsed.is_discarded() && parsed.is_object()) {
      args = &parsed;
    } else {
      *out += args->get<std::string>();
      args = nullptr;
    }
  }
  if (args != nullptr && args->is_object()) {
    // Same key order and value syntax as tool_syntax::FormatValue of an object, keys unquoted.
    const std::string body = tool_syntax::FormatValue(*args, /*quote_keys=*/false);
    *out += body.substr(1, body.size() - 2);
  }
  *out += "}" + Str(gemma4::kToolCallEnd);
  return Status::Ok();
}

}  // namespace

std::string StripThinking(std::string_view text) {
  // for part in text.split('<channel|>'): keep the part before any '<|channel>' in it.
  std::string out;
  size_t i = 0;
  while (true) {
    const size_t end = text.find(gemma4::kChannelEnd, i);
    const std::string_view part =
        text.substr(i, end == std::string_view::npos ? std::string_view::npos : end - i);
    const size_t open = part.find(gemma4::kChannelStart);
    out += part.substr(0, open);
    if (end == std::string_view::npos) break;
    i = end + gemma4::kChannelEnd.size();
  }
  return std::string(Trim(out));
}

namespace {

StatusOr<std::string> RenderGemma4Chat(const json& messages, const json& tools,
                                       const ChatOptions& options) {
  if (!messages.is_array()) return InvalidArgument("messages must be an array");
  if (!tools.is_null() && !tools.is_array()) return InvalidArgument("tools must be an array");
  std::vector<std::string> roles;
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!messages[i].is_object()) return InvalidArgument(where + " is not an object");
    const std::string role = StringField(messages[i], "role");
    if (role != "system" && role != "developer" && role != "user" && role != "assistant" &&
        role != "tool") {
      return InvalidArgument(where + ".role is '" + role +
                             "' (expected system, developer, user, assistant or tool)");
    }
    roles.push_back(role);
  }
  const bool has_tools = tools.is_array() && !tools.empty();

  std::string out(gemma4::kBos);
  size_t first = 0;
  // The system turn: thinking switch, the first system/developer message, tool declarations.
  const bool first_is_system =
      !roles.empty() && (roles[0] == "system" || roles[0] == "developer");
  if (options.enable_thinking || has_tools || first_is_system) {
    out += Str(gemma4::kTurnStart) + "system\n";
    if (options.enable_thinking) {
      out += gemma4::kThink;
      if (options.style.newline_after_think) out += '\n';
    }
    if (first_is_system) {
      out += Trim(PlainText(Field(messages[0], "content")));
      first = 1;
    }
    if (has_tools) {
      for (const json& tool : tools) {
        out += Str(gemma4::kToolStart) + tool_syntax::FormatDeclaration(tool) +
               Str(gemma4::kToolEnd);
      }
    }
    out += Str(gemma4::kTurnEnd) + "\n";
  }

  // Reasoning is replayed only on tool-calling turns after the last user message.
  size_t last_user = SIZE_MAX;
  for (size_t i = first; i < messages.size(); ++i) {
    if (roles[i] == "user") last_user = i;
  }

  Prev prev = Prev::kNone;
  for (size_t i = first; i < messages.size(); ++i) {
    const std::string& role = roles[i];
    const json& m = messages[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (role == "tool") {
      // Rendered inside the model turn of the assistant message whose calls it answers.
      size_t j = i;
      while (j > first && roles[j - 1] == "tool") --j;
      const bool answers_call = j > first && roles[j - 1] == "assistant" &&
                                Field(messages[j - 1], "tool_calls") != nullptr &&
                                !messages[j - 1]["tool_calls"].empty();
      if (!answers_call) {
        return InvalidArgument(where +
                               ": a tool message must follow an assistant message with tool_calls");
      }
      continue;
    }
    prev = Prev::kNone;
    const bool model = role == "assistant";
    const std::string turn_role = model ? "model" : role == "developer" ? "system" : role;
    // An assistant message right after another (tool messages aside) continues its model turn.
    bool continuation = false;
    for (size_t j = i; j > first; --j) {
      if (roles[j - 1] == "tool") continue;
      continuation = model && roles[j - 1] == "assistant";
      break;
    }
    if (!continuation) out += Str(gemma4::kTurnStart) + turn_role + "\n";

    const json* calls = model ? Field(m, "tool_calls") : nullptr;
    if (calls != nullptr && !calls->is_array()) {
      return InvalidArgument(where + ".tool_calls must be an array");
    }
    const bool has_calls = calls != nullptr && !calls->empty();
    if (model) {
      std::string thinking = StringField(m, "reasoning");
      if (thinking.empty()) thinking = StringField(m, "reasoning_content");
      const bool after_last_user = last_user == SIZE_MAX || i > last_user;
      if (!thinking.empty() && has_calls && after_last_user) {
        out += Str(gemma4::kChannelStart) + "thought\n" + thinking + "\n" +
               Str(gemma4::kChannelEnd);
      }
    }
    if (has_calls) {
      for (size_t k = 0; k < calls->size(); ++k) {
        G4_RETURN_IF_ERROR(AppendToolCall((*calls)[k],
                                          where + ".tool_calls[" + std::to_string(k) + "]", &out));
      }
      prev = Prev::kToolCall;
    }

    bool responded = false;
    const json* legacy = model ? Field(m, "tool_responses") : nullptr;
    if (legacy != nullptr && legacy->is_array() && !legacy->empty()) {
      for (const json& r : *legacy) {
        std::string name = r.is_object() ? StringField(r, "name") : std::string();
        if (name.empty()) name = "unknown";
        const json* resp = r.is_object() ? Field(r, "response") : nullptr;
        out += Str(gemma4::kToolResponseStart) +
               tool_syntax::FormatResponse(name, resp ? *resp : json()) +
               Str(gemma4::kToolResponseEnd);
        responded = true;
        prev = Prev::kToolResponse;
      }
    } else if (has_calls) {
      for (size_t k = i + 1; k < messages.size() && roles[k] == "tool"; ++k) {
        const json& t = messages[k];
        std::string name = StringField(t, "name");
        if (name.empty()) name = "unknown";
        const std::string id = StringField(t, "tool_call_id");
        for (const json& c : *calls) {
          if (c.is_object() && Field(c, "id") != nullptr && StringField(c, "id") == id &&
              Field(c, "function") != nullptr) {
            name = StringField(c["function"], "name");
          }
        }
        const json* body = Field(t, "content");
        json value = body == nullptr ? json()
                     : body->is_array() ? json(PlainText(body))
                                        : *body;
        out += Str(gemma4::kToolResponseStart) + tool_syntax::FormatResponse(name, value) +
               Str(gemma4::kToolResponseEnd);
        responded = true;
        prev = Prev::kToolResponse;
      }
    }

    G4_RETURN_IF_ERROR(AppendContent(m, model, where, &out, &prev));

    if (prev == Prev::kToolCall && !responded) {
      out += gemma4::kToolResponseStart;  // the model's next move is to wait for the result
    } else if (!(responded && !HasContent(m))) {
      out += Str(gemma4::kTurnEnd) + "\n";
    }
  }

  if (options.add_generation_prompt && prev != Prev::kToolResponse && prev != Prev::kToolCall) {
    out += Str(gemma4::kTurnStart) + "model\n";
    if (options.style.empty_thought_in_generation_prompt && !options.enable_thinking) {
      out += Str(gemma4::kChannelStart) + "thought\n" + Str(gemma4::kChannelEnd);
    }
  }
  return out;
}

}  // namespace

StatusOr<std::string> RenderChat(const json& messages, const json& tools,
                                 const ChatOptions& options) {
  switch (options.style.format) {
    case ChatFormat::kGemma4:
      return RenderGemma4Chat(messages, tools, options);
    case ChatFormat::kGemma3:
      return RenderGemma3Chat(messages, tools, options);
    case ChatFormat::kNone:
      break;
  }
  return FailedPrecondition("the model has no chat template (" + options.style.source +
                            "), so chat messages cannot be rendered; only /v1/completions "
                            "(a raw prompt) can be used");
}

}  // namespace g4
