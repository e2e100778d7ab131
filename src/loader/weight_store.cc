// WeightStore: resolves a checkpoint directory to its safetensors files and merges their
// tensor tables, validating the index against what the shards really hold.
#include "loader/weight_store.h"

#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <utility>

#include "loader/json_file.h"
#include "loader/loader_util.h"

namespace g4 {
namespace {

using loader_internal::JoinPath;
using loader_internal::Quoted;

using nlohmann::json;

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// A shard name must stay inside the checkpoint directory: a plain file name, no separators
// and no parent references (an index is input, and could point anywhere).
bool IsSafeShardName(const std::string& name) {
  return !name.empty() && name != "." && name.find('/') == std::string::npos &&
         name.find('\\') == std::string::npos && name.find("..") == std::string::npos &&
         name.find('\0') == std::string::npos;
}

// The index's "weight_map": tensor name -> shard file name, validated.
StatusOr<std::map<std::string, std::string>> ReadWeightMap(const std::string& index_path) {
  G4_ASSIGN_OR_RETURN(json index, ReadJsonFile(index_path));
  if (!index.is_object()) {
    return InvalidArgument(index_path + ": not a JSON object (found " +
                           std::string(index.type_name()) + ")");
  }
  const auto it = index.find("weight_map");
  if (it == index.end() || !it->is_object()) {
    return InvalidArgument(index_path + ": field 'weight_map' is missing or not an object");
  }
  if (it->empty()) return InvalidArgument(index_path + ": field 'weight_map' is empty");
  std::map<std::string, std::string> weight_map;
  for (const auto& [tensor, shard] : it->items()) {
    if (!shard.is_string()) {
      return InvalidArgument(index_path + ": weight_map entry for tensor " + Quoted(tensor) +
                             " is not a string");
    }
    const std::string& name = shard.get_ref<const std::string&>();
    if (!IsSafeShardName(name)) {
      return InvalidArgument(index_path + ": weight_map entry for tensor " + Quoted(tensor) +
                             " names shard " + Quoted(name) +
                             ", which is not a plain file name in the directory");
    }
    weight_map.emplace(tensor, name);
  }
  return weight_map;
}

}  // namespace

Status WeightStore::AddShard(std::unique_ptr<SafetensorsFile> shard) {
  for (const TensorInfo& t : shard->tensors()) {
    const auto [it, inserted] = by_name_.emplace(t.name, &t);
    if (!inserted) {
      return InvalidArgument("tensor " + Quoted(t.name) + " is in two shards: " +
                             it->second->file + " and " + t.file);
    }
    total_bytes_ += t.nbytes;
  }
  files_.push_back(shard->path());
  shards_.push_back(std::move(shard));
  return Status::Ok();
}

StatusOr<std::unique_ptr<WeightStore>> WeightStore::OpenDir(const std::string& dir) {
  std::unique_ptr<WeightStore> store(new WeightStore());
  const std::string index_path = JoinPath(dir, kSafetensorsIndexName);
  const std::string single_path = JoinPath(dir, kSingleSafetensorsName);

  if (!Exists(index_path)) {
    if (!Exists(single_path)) {
      return NotFound(dir + ": no checkpoint: neither " + std::string(kSafetensorsIndexName) +
                      " nor " + kSingleSafetensorsName + " exists in the directory");
    }
    G4_ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsFile> file, SafetensorsFile::Open(single_path));
    G4_RETURN_IF_ERROR(store->AddShard(std::move(file)));
    return store;
  }

  G4_ASSIGN_OR_RETURN(auto weight_map, ReadWeightMap(index_path));
  // Each shard once, in name order (std::map) so files() is deterministic.
  std::map<std::string, const SafetensorsFile*> shard_by_name;
  for (const auto& [tensor, shard] : weight_map) shard_by_name.emplace(shard, nullptr);
  for (auto& [name, opened] : shard_by_name) {
    StatusOr<std::unique_ptr<SafetensorsFile>> file = SafetensorsFile::Open(JoinPath(dir, name));
    if (!file.ok()) {
      return file.status().WithContext(index_path + ": weight_map names shard " + Quoted(name));
    }
    opened = file->get();
    G4_RETURN_IF_ERROR(store->AddShard(std::move(*file)).WithContext(index_path));
  }
  for (const auto& [tensor, shard] : weight_map) {
    const SafetensorsFile* file = shard_by_name[shard];
    if (file->Find(tensor) == nullptr) {
      return NotFound(index_path + ": weight_map puts tensor " + Quoted(tensor) + " in shard " +
                      file->path() + ", which does not contain it");
    }
  }
  return store;
}

const TensorInfo* WeightStore::Find(std::string_view name) const {
  const auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

std::vector<std::string> WeightStore::Names() const {
  std::vector<std::string> names;
  names.reserve(by_name_.size());
  for (const auto& [name, info] : by_name_) names.push_back(name);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace g4
