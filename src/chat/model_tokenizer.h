// The tokenizer and chat style of a model, whatever its format: a GGUF file carries both in its
// metadata (tokenizer.ggml.*, tokenizer.chat_template); a checkpoint directory has tokenizer.json
// and friends; a tokenizer.json path is read as such (default chat style). The checkpoint is the
// one the model was loaded from (loader/checkpoint.h): its mapping and its generation_config.json
// are shared, not read again.
#pragma once

#include <memory>
#include <string>

#include "chat/chat.h"
#include "core/status.h"
#include "loader/checkpoint.h"
#include "tokenizer/tokenizer.h"

namespace g4 {

struct ModelTokenizer {
  std::unique_ptr<Tokenizer> tokenizer;
  ChatStyle chat_style;
};

// True for a path Checkpoint::Open reads as a GGUF file (Checkpoint::IsGgufPath).
bool IsGgufModelPath(const std::string& path);

StatusOr<ModelTokenizer> LoadModelTokenizer(const Checkpoint& checkpoint);
// A checkpoint directory, a GGUF file or a tokenizer.json file.
StatusOr<ModelTokenizer> LoadModelTokenizer(const std::string& model_path);

}  // namespace g4
