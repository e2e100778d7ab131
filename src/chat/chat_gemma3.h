// The Gemma 3 chat format (ChatFormat::kGemma3): Google's Gemma 3 chat template written out in C++
// (chat.h describes what it renders and refuses). RenderChat dispatches here.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "chat/chat.h"
#include "core/status.h"

namespace g4 {

StatusOr<std::string> RenderGemma3Chat(const nlohmann::json& messages, const nlohmann::json& tools,
                                       const ChatOptions& options);

}  // namespace g4
