// Special-token ids from the checkpoint's JSON side files; precedence follows transformers:
// generation_config.json ids over tokenizer_config.json names over the default names.
#include "tokenizer/special_tokens.h"

#include <algorithm>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "loader/json_file.h"
#include "tokenizer/gemma4_tokens.h"

namespace g4 {
namespace {

void Normalize(std::vector<int32_t>* ids) {
  ids->erase(std::remove(ids->begin(), ids->end(), -1), ids->end());
  std::sort(ids->begin(), ids->end());
  ids->erase(std::unique(ids->begin(), ids->end()), ids->end());
}

// A token named in tokenizer_config.json: "<bos>" or {"content": "<bos>", ...} or null.
Status NamedToken(const nlohmann::json& cfg, const char* field, const std::string& path,
                  const PieceLookup& lookup, int32_t* id) {
  const auto it = cfg.find(field);
  if (it == cfg.end() || it->is_null()) return Status::Ok();
  std::string name;
  if (it->is_string()) {
    name = it->get<std::string>();
  } else if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) {
    name = (*it)["content"].get<std::string>();
  } else {
    return InvalidArgument(path + ": " + field + " is neither a string nor {\"content\": ...}");
  }
  const int32_t found = lookup(name);
  if (found < 0) {
    return InvalidArgument(path + ": " + field + " '" + name + "' is not in the vocabulary");
  }
  *id = found;
  return Status::Ok();
}

// An id field: an integer or a list of integers (eos_token_id); appends to *ids.
Status IdField(const nlohmann::json& cfg, const char* field, const std::string& path,
               int32_t vocab_size, std::vector<int32_t>* ids, bool* present) {
  const auto it = cfg.find(field);
  *present = false;
  if (it == cfg.end() || it->is_null()) return Status::Ok();
  auto one = [&](const nlohmann::json& v) -> Status {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= vocab_size) {
      return InvalidArgument(path + ": " + field + " has " + v.dump() +
                             ", not a token id below the vocabulary size " +
                             std::to_string(vocab_size));
    }
    ids->push_back(static_cast<int32_t>(v.get<int64_t>()));
    return Status::Ok();
  };
  if (it->is_array()) {
    for (const auto& v : *it) G4_RETURN_IF_ERROR(one(v));
  } else {
    G4_RETURN_IF_ERROR(one(*it));
  }
  *present = true;
  return Status::Ok();
}

StatusOr<nlohmann::json> ReadOptional(const std::string& path, bool* exists) {
  std::error_code ec;
  *exists = std::filesystem::exists(path, ec);
  if (!*exists) return nlohmann::json::object();
  G4_ASSIGN_OR_RETURN(nlohmann::json j, ReadJsonFile(path));
  if (!j.is_object()) return InvalidArgument(path + ": expected a JSON object");
  return j;
}

}  // namespace

SpecialTokenIds DefaultSpecialTokenIds(const PieceLookup& lookup, int32_t vocab_size) {
  SpecialTokenIds s;
  s.bos = lookup(gemma4::kBos);
  s.eos = lookup(gemma4::kEos);
  s.pad = lookup(gemma4::kPad);
  s.unk = lookup(gemma4::kUnk);
  s.stop_ids = {s.eos, lookup(gemma4::kTurnEnd), lookup(gemma4::kToolResponseStart)};
  Normalize(&s.stop_ids);
  (void)vocab_size;
  return s;
}

StatusOr<SpecialTokenIds> SpecialTokenIdsFromJson(const CheckpointJsonFiles& files,
                                                  const PieceLookup& lookup, int32_t vocab_size) {
  SpecialTokenIds s = DefaultSpecialTokenIds(lookup, vocab_size);
  std::vector<int32_t> stops;

  if (const nlohmann::json* tc = files.tokenizer_config) {
    const std::string& tc_path = files.tokenizer_config_path;
    if (!tc->is_object()) return InvalidArgument(tc_path + ": expected a JSON object");
    G4_RETURN_IF_ERROR(NamedToken(*tc, "bos_token", tc_path, lookup, &s.bos));
    G4_RETURN_IF_ERROR(NamedToken(*tc, "eos_token", tc_path, lookup, &s.eos));
    G4_RETURN_IF_ERROR(NamedToken(*tc, "pad_token", tc_path, lookup, &s.pad));
    G4_RETURN_IF_ERROR(NamedToken(*tc, "unk_token", tc_path, lookup, &s.unk));
    const auto it = tc->find("add_bos_token");
    if (it != tc->end() && it->is_boolean()) s.add_bos_token = it->get<bool>();
  }

  bool present = false;
  bool have_stop_list = false;
  if (const nlohmann::json* gc = files.generation_config) {
    const std::string& gc_path = files.generation_config_path;
    if (!gc->is_object()) return InvalidArgument(gc_path + ": expected a JSON object");
    std::vector<int32_t> one;
    G4_RETURN_IF_ERROR(IdField(*gc, "bos_token_id", gc_path, vocab_size, &one, &present));
    if (present && !one.empty()) s.bos = one.front();
    one.clear();
    G4_RETURN_IF_ERROR(IdField(*gc, "pad_token_id", gc_path, vocab_size, &one, &present));
    if (present && !one.empty()) s.pad = one.front();
    G4_RETURN_IF_ERROR(IdField(*gc, "eos_token_id", gc_path, vocab_size, &stops, &present));
    have_stop_list = present;
    // The config's eos_token_id is a list of stops; the "EOS" of the tokenizer stays the named one.
  } else if (const nlohmann::json* cfg = files.config) {
    const std::string& cfg_path = files.config_path;
    if (!cfg->is_object()) return InvalidArgument(cfg_path + ": expected a JSON object");
    G4_RETURN_IF_ERROR(IdField(*cfg, "eos_token_id", cfg_path, vocab_size, &stops, &present));
    if (!present && cfg->contains("text_config") && (*cfg)["text_config"].is_object()) {
      G4_RETURN_IF_ERROR(IdField((*cfg)["text_config"], "eos_token_id", cfg_path + " text_config",
                                 vocab_size, &stops, &present));
    }
    have_stop_list = present;
  }
  if (have_stop_list) {
    stops.push_back(s.eos);
    s.stop_ids = stops;
  } else {
    s.stop_ids.push_back(s.eos);
  }
  Normalize(&s.stop_ids);
  return s;
}

StatusOr<SpecialTokenIds> ReadSpecialTokenIds(const std::string& model_dir,
                                              const PieceLookup& lookup, int32_t vocab_size) {
  namespace fs = std::filesystem;
  CheckpointJsonFiles files;
  files.tokenizer_config_path = (fs::path(model_dir) / "tokenizer_config.json").string();
  files.generation_config_path = (fs::path(model_dir) / "generation_config.json").string();
  files.config_path = (fs::path(model_dir) / "config.json").string();
  bool has_tc = false, has_gc = false, has_cfg = false;
  G4_ASSIGN_OR_RETURN(const nlohmann::json tc, ReadOptional(files.tokenizer_config_path, &has_tc));
  G4_ASSIGN_OR_RETURN(const nlohmann::json gc, ReadOptional(files.generation_config_path, &has_gc));
  nlohmann::json cfg;
  if (!has_gc) {  // config.json's eos ids count only without a generation config
    G4_ASSIGN_OR_RETURN(cfg, ReadOptional(files.config_path, &has_cfg));
  }
  files.tokenizer_config = has_tc ? &tc : nullptr;
  files.generation_config = has_gc ? &gc : nullptr;
  files.config = has_cfg ? &cfg : nullptr;
  return SpecialTokenIdsFromJson(files, lookup, vocab_size);
}

}  // namespace g4
