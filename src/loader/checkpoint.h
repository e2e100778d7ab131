// Checkpoint: a model path opened once, shared by the model, the tokenizer and the front ends.
// Either a Hugging Face directory (config.json, optional generation_config.json, safetensors
// single or sharded) or one GGUF file. Every file is mapped and every JSON file read once here;
// nothing downstream re-opens the path. The one GGUF detector (IsGgufPath) lives here too.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "core/tensor.h"
#include "loader/gguf.h"
#include "loader/weight_store.h"

namespace g4 {

// A tensor found in a checkpoint: its view (into the mapping) and the file that holds it.
struct CheckpointTensor {
  TensorView view;
  std::string file;
};

class Checkpoint {
 public:
  enum class Format { kSafetensors, kGguf };

  struct OpenOptions {
    // False: only the JSON files of a directory (a tokenizer-only caller); its weights are not
    // mapped and FindTensor finds nothing. GGUF files are always mapped (the tokenizer is there).
    bool weights = true;
  };

  // A regular file that starts with the GGUF magic or is named *.gguf is a GGUF file; anything
  // else must be a directory with config.json. Errors name the path (NotFound when it does not
  // exist, InvalidArgument for a file that is not GGUF).
  static StatusOr<std::shared_ptr<const Checkpoint>> Open(const std::string& path,
                                                          const OpenOptions& options);
  static StatusOr<std::shared_ptr<const Checkpoint>> Open(const std::string& path) {
    return Open(path, OpenOptions{});
  }
  // True when Open(path) would read `path` as a GGUF file.
  static bool IsGgufPath(const std::string& path);

  Format format() const { return format_; }
  bool is_gguf() const { return format_ == Format::kGguf; }
  // The path as given: the directory or the .gguf file.
  const std::string& path() const { return path_; }

  // The architecture the checkpoint declares: config.json's model_type (a directory) or
  // general.architecture (GGUF); empty when absent. `hf_architectures` is config.json's
  // "architectures" list (empty for GGUF).
  const std::string& architecture() const { return architecture_; }
  const std::vector<std::string>& hf_architectures() const { return hf_architectures_; }

  // Directory checkpoints: config.json and generation_config.json (null when absent), and the
  // path of a file in the directory (for error messages).
  const nlohmann::json* config() const { return config_ ? &*config_ : nullptr; }
  const nlohmann::json* generation_config() const {
    return generation_config_ ? &*generation_config_ : nullptr;
  }
  std::string FilePath(std::string_view name) const;

  // The mapped weights: the safetensors store (directories opened with weights) or the GGUF file.
  const WeightStore* store() const { return store_.get(); }
  const GgufFile* gguf() const { return gguf_.get(); }

  // A tensor by its name in the file, or nullopt when absent. GGUF tensors of a type g4 has no
  // kernels for are an Unimplemented error naming the tensor.
  StatusOr<std::optional<CheckpointTensor>> FindTensor(std::string_view name) const;
  // Every tensor name of the checkpoint, in file order (GGUF) or sorted (safetensors).
  std::vector<std::string> TensorNames() const;

  // Bytes of checkpoint files mapped (all shards, or the GGUF file).
  uint64_t mapped_bytes() const;

 private:
  Checkpoint() = default;

  Format format_ = Format::kSafetensors;
  std::string path_;
  std::string architecture_;
  std::vector<std::string> hf_architectures_;
  std::optional<nlohmann::json> config_, generation_config_;
  std::unique_ptr<WeightStore> store_;
  std::unique_ptr<GgufFile> gguf_;
};

}  // namespace g4
