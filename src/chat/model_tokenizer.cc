// Chooses the tokenizer source of a model (GGUF metadata or tokenizer.json).
#include "chat/model_tokenizer.h"

#include <filesystem>

#include "loader/json_file.h"
#include "tokenizer/gguf_vocab.h"
#include "tokenizer/special_tokens.h"

namespace g4 {

bool IsGgufModelPath(const std::string& path) { return Checkpoint::IsGgufPath(path); }

StatusOr<ModelTokenizer> LoadModelTokenizer(const Checkpoint& ckpt) {
  ModelTokenizer m;
  if (ckpt.is_gguf()) {
    G4_ASSIGN_OR_RETURN(m.tokenizer, TokenizerFromGguf(*ckpt.gguf()));
    G4_ASSIGN_OR_RETURN(m.chat_style, ChatStyleFromGguf(*ckpt.gguf()));
    return m;
  }
  const std::string file = ckpt.FilePath("tokenizer.json");
  std::error_code missing;
  if (!std::filesystem::exists(file, missing)) {
    // What `g4 make-model` without --tokenizer writes: runnable by ids only.
    return NotFound(ckpt.path() + " has no tokenizer.json: text commands need the checkpoint's "
                    "tokenizer (a checkpoint from `g4 make-model` gets one with --tokenizer; "
                    "`g4 logits` and `g4 generate --ids` run without)");
  }
  G4_ASSIGN_OR_RETURN(std::unique_ptr<TokenizerJson> json, ReadTokenizerJson(file));
  G4_ASSIGN_OR_RETURN(m.tokenizer, Tokenizer::FromJson(*json, file));
  CheckpointJsonFiles files;
  files.tokenizer_config_path = ckpt.FilePath("tokenizer_config.json");
  files.generation_config_path = ckpt.FilePath("generation_config.json");
  files.config_path = ckpt.FilePath("config.json");
  std::optional<nlohmann::json> tc;
  std::error_code ec;
  if (std::filesystem::exists(files.tokenizer_config_path, ec)) {
    G4_ASSIGN_OR_RETURN(tc, ReadJsonFile(files.tokenizer_config_path));
  }
  files.tokenizer_config = tc ? &*tc : nullptr;
  files.generation_config = ckpt.generation_config();
  files.config = ckpt.config();
  const Tokenizer* t = m.tokenizer.get();
  G4_ASSIGN_OR_RETURN(
      SpecialTokenIds ids,
      SpecialTokenIdsFromJson(files, [t](std::string_view p) { return t->TokenId(p); },
                              t->vocab_size()));
  m.tokenizer->set_special_ids(std::move(ids));
  G4_ASSIGN_OR_RETURN(m.chat_style, DetectChatStyle(ckpt.path()));
  return m;
}

StatusOr<ModelTokenizer> LoadModelTokenizer(const std::string& model_path) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(model_path, ec) && !Checkpoint::IsGgufPath(model_path)) {
    ModelTokenizer m;  // a tokenizer.json file
    G4_ASSIGN_OR_RETURN(m.tokenizer, Tokenizer::Load(model_path));
    return m;
  }
  Checkpoint::OpenOptions options;
  options.weights = false;
  G4_ASSIGN_OR_RETURN(std::shared_ptr<const Checkpoint> ckpt,
                      Checkpoint::Open(model_path, options));
  return LoadModelTokenizer(*ckpt);
}

}  // namespace g4
