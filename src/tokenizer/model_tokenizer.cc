// Chooses the tokenizer source of a model path (GGUF metadata or tokenizer.json).
#include "tokenizer/model_tokenizer.h"

#include <filesystem>

#include "loader/gguf.h"
#include "tokenizer/gguf_vocab.h"

namespace g4 {

bool IsGgufModelPath(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec) && GgufFile::HasMagic(path);
}

StatusOr<ModelTokenizer> LoadModelTokenizer(const std::string& model_path) {
  ModelTokenizer m;
  if (IsGgufModelPath(model_path)) {
    G4_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, GgufFile::Open(model_path));
    G4_ASSIGN_OR_RETURN(m.tokenizer, TokenizerFromGguf(*file));
    G4_ASSIGN_OR_RETURN(m.chat_style, ChatStyleFromGguf(*file));
    return m;
  }
  G4_ASSIGN_OR_RETURN(m.tokenizer, Tokenizer::Load(model_path));
  std::error_code ec;
  if (std::filesystem::is_directory(model_path, ec)) {
    G4_ASSIGN_OR_RETURN(m.chat_style, DetectChatStyle(model_path));
  }
  return m;
}

}  // namespace g4
