// The tokenizer and chat style of a model path, whatever its format: a GGUF file carries both in
// its metadata (tokenizer.ggml.*, tokenizer.chat_template); a checkpoint directory has
// tokenizer.json and friends; a tokenizer.json path is read as such (default chat style).
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "tokenizer/chat.h"
#include "tokenizer/tokenizer.h"

namespace g4 {

struct ModelTokenizer {
  std::unique_ptr<Tokenizer> tokenizer;
  ChatStyle chat_style;
};

// True for a regular file that starts with the GGUF magic.
bool IsGgufModelPath(const std::string& path);

StatusOr<ModelTokenizer> LoadModelTokenizer(const std::string& model_path);

}  // namespace g4
