// Fuzzes the chat request path of the server up to the prompt: ParseChatRequest (the
// /v1/chat/completions body, server/openai/request.h) and RenderChat (chat/chat.h) of what
// it accepts, in both chat styles. RenderChat is also fed the raw body's "messages" and "tools"
// without the request validation in front, since it documents InvalidArgument for malformed
// messages itself.
#include <cstddef>
#include <cstdint>
#include <string>

#include "chat/chat.h"
#include "fuzz/fuzz_util.h"
#include "loader/json_file.h"
#include "server/openai/request.h"

namespace {

g4::openai::ServerDefaults Defaults() {
  g4::openai::ServerDefaults d;
  d.model_name = "gemma-4-e2b";
  d.max_model_len = 8192;
  d.sampling.temperature = 1.0f;
  d.sampling.top_k = 64;
  d.sampling.top_p = 0.95f;
  d.stop_token_ids = {1, 106, 50};
  return d;
}

void Render(const nlohmann::json& messages, const nlohmann::json& tools, bool add_generation,
            bool thinking) {
  for (bool big : {false, true}) {
    g4::ChatOptions options;
    options.add_generation_prompt = add_generation;
    options.enable_thinking = thinking;
    options.style.empty_thought_in_generation_prompt = big;
    options.style.newline_after_think = !big;
    auto prompt = g4::RenderChat(messages, tools, options);
    if (prompt.ok()) {
      G4_FUZZ_CHECK(prompt->rfind("<bos>", 0) == 0);
    } else {
      G4_FUZZ_CHECK(!prompt.status().message().empty());
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const g4::openai::ServerDefaults defaults = Defaults();
  const std::string_view body = g4::fuzz::AsText(data, size);
  g4::openai::ParseResult parsed = g4::openai::ParseChatRequest(body, defaults);
  if (parsed.ok()) {
    const g4::openai::ParsedRequest& r = parsed.value();
    G4_FUZZ_CHECK(r.kind == g4::openai::ParsedRequest::Kind::kChat);
    G4_FUZZ_CHECK(r.messages.is_array());
    auto max = g4::openai::ResolveMaxTokens(r, 100, defaults.max_model_len);
    if (max.ok()) G4_FUZZ_CHECK(max.value() > 0);
    Render(r.messages, nullptr, r.add_generation_prompt, r.enable_thinking);
  } else {
    const int status = parsed.error().status;
    G4_FUZZ_CHECK(status == 400 || status == 404);  // never a 5xx for a client's body
  }

  auto raw = g4::ParseJson(body, "body");
  if (raw.ok() && raw->is_object()) {
    const nlohmann::json& j = *raw;
    const nlohmann::json messages = j.contains("messages") ? j["messages"] : nlohmann::json();
    const nlohmann::json tools = j.contains("tools") ? j["tools"] : nlohmann::json();
    Render(messages, tools, true, j.contains("thinking"));
  }
  return 0;
}
