// Validation of a chat request's `messages` before they reach RenderChat (chat/chat.h):
// the shape checks vLLM and llama-server answer with a 400 (server-api.md §2), so that a
// malformed list is a client error naming `messages`, never a failure deeper in the engine.
#pragma once

#include <nlohmann/json.hpp>

#include "server/openai/field_reader.h"

namespace g4::openai {

// Accepts a non-empty array of objects, each with a known role (system, developer, user,
// assistant, tool) and `content` that is a string or an array of text parts ({"type": "text",
// "text": string}); content may be null or absent only on an assistant message with tool_calls
// (as OpenAI rules; the 400 has param "messages[i].content"). Image, audio, video and file
// parts are a 400 that says they are not supported (g4 serves text models); unknown part types
// are a 400 too. Other
// message keys (name, tool_calls, tool_call_id, reasoning_content, ...) pass through to
// RenderChat, which validates them. Every other error has param "messages".
MaybeError ValidateMessages(const nlohmann::json* messages);

}  // namespace g4::openai
