// DetectChatStyle: which chat format a checkpoint expects (Gemma 4, Gemma 3 or none) and, for
// Gemma 4, which generation prompt (the E2B/E4B and 26B/31B templates differ exactly there,
// gemma4.md §4.3), decided from its own chat template, falling back to config.json when no
// template ships.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "chat/chat.h"
#include "loader/gguf.h"
#include "loader/json_file.h"
#include "tokenizer/gguf_vocab_common.h"

namespace g4 {

std::string_view ChatFormatName(ChatFormat format) {
  switch (format) {
    case ChatFormat::kGemma4:
      return "gemma4";
    case ChatFormat::kGemma3:
      return "gemma3";
    case ChatFormat::kNone:
      return "none";
  }
  return "unknown";
}

ChatStyle ChatStyleFromTemplate(std::string_view jinja) {
  ChatStyle style;
  if (jinja.find("<|turn>") == std::string_view::npos &&
      jinja.find("<start_of_turn>") != std::string_view::npos) {
    style.format = ChatFormat::kGemma3;
    return style;
  }
  style.empty_thought_in_generation_prompt =
      jinja.find("<|channel>thought\\n<channel|>") != std::string_view::npos ||
      jinja.find("<|channel>thought\n<channel|>") != std::string_view::npos;
  style.newline_after_think = jinja.find("'<|think|>'") == std::string_view::npos &&
                              jinja.find("\"<|think|>\"") == std::string_view::npos;
  return style;
}

StatusOr<ChatStyle> DetectChatStyle(const std::string& model_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path dir(model_dir);
  const fs::path jinja_path = dir / "chat_template.jinja";
  if (fs::exists(jinja_path, ec)) {
    std::ifstream f(jinja_path, std::ios::binary);
    if (!f) return IoError("cannot read " + jinja_path.string());
    std::stringstream ss;
    ss << f.rdbuf();
    ChatStyle style = ChatStyleFromTemplate(ss.str());
    style.source = jinja_path.string();
    return style;
  }
  const fs::path tc_path = dir / "tokenizer_config.json";
  if (fs::exists(tc_path, ec)) {
    G4_ASSIGN_OR_RETURN(nlohmann::json tc, ReadJsonFile(tc_path.string()));
    const auto it = tc.is_object() ? tc.find("chat_template") : tc.end();
    if (it != tc.end()) {
      std::string text;
      if (it->is_string()) {
        text = it->get<std::string>();
      } else if (it->is_array()) {  // [{"name": "default", "template": ...}, ...]
        for (const auto& t : *it) {
          if (t.is_object() && t.value("name", "") == "default" && t.contains("template") &&
              t["template"].is_string()) {
            text = t["template"].get<std::string>();
          }
        }
      }
      if (!text.empty()) {
        ChatStyle style = ChatStyleFromTemplate(text);
        style.source = tc_path.string() + " chat_template";
        return style;
      }
    }
  }
  const fs::path cfg_path = dir / "config.json";
  if (fs::exists(cfg_path, ec)) {
    G4_ASSIGN_OR_RETURN(nlohmann::json cfg, ReadJsonFile(cfg_path.string()));
    const nlohmann::json& text =
        cfg.is_object() && cfg.contains("text_config") && cfg["text_config"].is_object()
            ? cfg["text_config"]
            : cfg;
    const int64_t ple = text.is_object() && text.contains("hidden_size_per_layer_input") &&
                                text["hidden_size_per_layer_input"].is_number_integer()
                            ? text["hidden_size_per_layer_input"].get<int64_t>()
                            : 0;
    ChatStyle style;
    const auto type = cfg.is_object() ? cfg.find("model_type") : cfg.end();
    if (type != cfg.end() && type->is_string() &&
        type->get_ref<const std::string&>().rfind("gemma3", 0) == 0) {
      style.format = ChatFormat::kNone;
      style.source = cfg_path.string() + " (model_type " + type->get<std::string>() +
                     " without a chat template)";
      return style;
    }
    style.empty_thought_in_generation_prompt = ple <= 0;
    style.source = cfg_path.string() + (ple > 0 ? " (per-layer embeddings: E2B/E4B form)"
                                                : " (no per-layer embeddings: 26B/31B form)");
    return style;
  }
  return ChatStyle{};
}

StatusOr<ChatStyle> ChatStyleFromGguf(const GgufFile& f) {
  if (f.Has(gguf_vocab::kTemplateKey)) {
    G4_ASSIGN_OR_RETURN(std::string text, f.GetString(gguf_vocab::kTemplateKey));
    ChatStyle style = ChatStyleFromTemplate(text);
    style.source = f.path() + " " + gguf_vocab::kTemplateKey;
    return style;
  }
  std::string arch = "gemma4";
  if (f.Has(gguf_vocab::kArchitectureKey)) {
    G4_ASSIGN_OR_RETURN(arch, f.GetString(gguf_vocab::kArchitectureKey));
  }
  ChatStyle style;
  if (arch != "gemma4") {
    style.format = ChatFormat::kNone;
    style.source = f.path() + " (no " + gguf_vocab::kTemplateKey + ", " + gguf_vocab::kArchitectureKey + " = " + arch + ")";
    return style;
  }
  constexpr const char* kPleKey = "gemma4.embedding_length_per_layer_input";
  if (f.Has(kPleKey)) {
    G4_ASSIGN_OR_RETURN(int64_t ple, f.GetInt(kPleKey));
    style.empty_thought_in_generation_prompt = ple <= 0;
    style.source = f.path() + (ple > 0 ? " (per-layer embeddings: E2B/E4B form)"
                                       : " (no per-layer embeddings: 26B/31B form)");
  }
  return style;
}

}  // namespace g4
