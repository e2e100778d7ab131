#include "loader/checkpoint.h"

#include <filesystem>

#include "loader/json_file.h"

namespace g4 {

namespace fs = std::filesystem;

bool Checkpoint::IsGgufPath(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return false;
  return path.ends_with(".gguf") || GgufFile::HasMagic(path);
}

StatusOr<std::shared_ptr<const Checkpoint>> Checkpoint::Open(const std::string& path,
                                                             const OpenOptions& options) {
  std::shared_ptr<Checkpoint> c(new Checkpoint());
  c->path_ = path;
  std::error_code ec;
  if (IsGgufPath(path)) {
    c->format_ = Format::kGguf;
    G4_ASSIGN_OR_RETURN(c->gguf_, GgufFile::Open(path));
    if (c->gguf_->Has(gguf::kArchitectureKey)) {
      G4_ASSIGN_OR_RETURN(c->architecture_, c->gguf_->GetString(gguf::kArchitectureKey));
    }
    return std::shared_ptr<const Checkpoint>(std::move(c));
  }
  if (!fs::exists(path, ec)) return NotFound(path + ": no such file or directory");
  if (!fs::is_directory(path, ec)) {
    return InvalidArgument(path + ": not a checkpoint directory (config.json + safetensors) "
                           "and not a GGUF file");
  }
  c->format_ = Format::kSafetensors;
  const std::string config_path = c->FilePath("config.json");
  if (options.weights || fs::exists(config_path, ec)) {
    G4_ASSIGN_OR_RETURN(c->config_, ReadJsonFile(config_path));
    if (!c->config_->is_object()) return InvalidArgument(config_path + ": not a JSON object");
    const nlohmann::json& j = *c->config_;
    if (j.contains("model_type") && j["model_type"].is_string()) {
      c->architecture_ = j["model_type"].get<std::string>();
    }
    if (j.contains("architectures") && j["architectures"].is_array()) {
      for (const auto& a : j["architectures"]) {
        if (a.is_string()) c->hf_architectures_.push_back(a.get<std::string>());
      }
    }
  }
  const std::string gen_path = c->FilePath("generation_config.json");
  if (fs::exists(gen_path, ec)) {
    G4_ASSIGN_OR_RETURN(c->generation_config_, ReadJsonFile(gen_path));
  }
  if (options.weights) {
    G4_ASSIGN_OR_RETURN(c->store_, WeightStore::OpenDir(path));
  }
  return std::shared_ptr<const Checkpoint>(std::move(c));
}

std::string Checkpoint::FilePath(std::string_view name) const {
  return (fs::path(path_) / std::string(name)).string();
}

StatusOr<std::optional<CheckpointTensor>> Checkpoint::FindTensor(std::string_view name) const {
  if (gguf_) {
    const GgufTensorInfo* t = gguf_->Find(name);
    if (!t) return std::optional<CheckpointTensor>();
    G4_ASSIGN_OR_RETURN(TensorView view, GgufFile::View(*t, gguf_->path()));
    return std::optional<CheckpointTensor>(CheckpointTensor{view, gguf_->path()});
  }
  if (!store_) return std::optional<CheckpointTensor>();
  const TensorInfo* t = store_->Find(name);
  if (!t) return std::optional<CheckpointTensor>();
  return std::optional<CheckpointTensor>(CheckpointTensor{t->view(), t->file});
}

std::vector<std::string> Checkpoint::TensorNames() const {
  if (gguf_) {
    std::vector<std::string> names;
    for (const GgufTensorInfo& t : gguf_->tensors()) names.push_back(t.name);
    return names;
  }
  return store_ ? store_->Names() : std::vector<std::string>{};
}

uint64_t Checkpoint::mapped_bytes() const {
  if (gguf_) return gguf_->size();
  return store_ ? store_->total_bytes() : 0;
}

}  // namespace g4
