// WeightStore: every tensor of a Hugging Face checkpoint directory, whether it is a single
// model.safetensors or shards listed by model.safetensors.index.json, behind one name lookup.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "loader/safetensors.h"

namespace g4 {

inline constexpr char kSafetensorsIndexName[] = "model.safetensors.index.json";
inline constexpr char kSingleSafetensorsName[] = "model.safetensors";

class WeightStore {
 public:
  // Opens `dir`. With dir/model.safetensors.index.json, opens each shard its "weight_map"
  // names (once each) and checks every listed tensor is in its shard; shard names containing
  // '/' or ".." are rejected, as is a tensor present in two shards. Without an index, opens
  // dir/model.safetensors. NotFound naming the directory and both file names if neither exists.
  static StatusOr<std::unique_ptr<WeightStore>> OpenDir(const std::string& dir);

  WeightStore(const WeightStore&) = delete;
  WeightStore& operator=(const WeightStore&) = delete;

  // nullptr if no file has a tensor called `name`.
  const TensorInfo* Find(std::string_view name) const;
  // All tensor names, sorted.
  std::vector<std::string> Names() const;
  // Sum of every tensor's nbytes.
  size_t total_bytes() const { return total_bytes_; }
  // Paths of the opened files, in shard-name order.
  const std::vector<std::string>& files() const { return files_; }

 private:
  WeightStore() = default;

  Status AddShard(std::unique_ptr<SafetensorsFile> shard);

  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  std::vector<std::unique_ptr<SafetensorsFile>> shards_;
  std::unordered_map<std::string, const TensorInfo*, NameHash, std::equal_to<>> by_name_;
  std::vector<std::string> files_;
  size_t total_bytes_ = 0;
};

}  // namespace g4
