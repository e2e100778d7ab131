// Safetensors writing: spec validation, header layout, buffered output through a temporary
// file, and the sharding / index logic of Hugging Face checkpoints.
#include "loader/safetensors_writer.h"

#include <cstdio>
#include <filesystem>
#include <memory>
#include <set>
#include <system_error>
#include <unordered_set>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/tensor.h"
#include "loader/loader_util.h"
#include "loader/output_file.h"
#include "loader/safetensors.h"
#include "loader/weight_store.h"

namespace g4 {
namespace {

using loader_internal::JoinPath;
using loader_internal::OutputFile;
using loader_internal::Quoted;
using loader_internal::TensorSink;

namespace fs = std::filesystem;

// Byte size of every spec, after checking names are usable and unique and sizes do not
// overflow, and that there is a fill to call (an empty std::function would throw).
// `what` (a path) starts error messages.
StatusOr<std::vector<uint64_t>> ValidateSpecs(const std::string& what,
                                              const std::vector<TensorSpec>& specs,
                                              const TensorFill& fill) {
  std::vector<uint64_t> bytes;
  bytes.reserve(specs.size());
  std::unordered_set<std::string_view> names;
  for (const TensorSpec& s : specs) {
    const std::string ctx = what + ": tensor " + Quoted(s.name);
    if (s.name.empty() || s.name == "__metadata__") {
      return InvalidArgument(ctx + ": reserved or empty name");
    }
    if (!names.insert(s.name).second) return InvalidArgument(ctx + ": duplicate tensor name");
    uint64_t n = DTypeSize(s.dtype);
    for (int64_t d : s.shape) {
      if (d < 0) {
        return InvalidArgument(ctx + ": negative dimension in shape " + ShapeToString(s.shape));
      }
      if (__builtin_mul_overflow(n, static_cast<uint64_t>(d), &n)) {
        return InvalidArgument(ctx + ": shape " + ShapeToString(s.shape) + " overflows 64 bits");
      }
    }
    bytes.push_back(n);
  }
  if (!specs.empty() && !fill) return InvalidArgument(what + ": no fill callback given");
  return bytes;
}

// The header JSON, space-padded so 8 + its length is a multiple of 8.
StatusOr<std::string> BuildHeader(const std::string& path, const std::vector<TensorSpec>& specs,
                                  const std::vector<uint64_t>& bytes,
                                  const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    header[specs[i].name] = {{"dtype", DTypeName(specs[i].dtype)},
                             {"shape", specs[i].shape},
                             {"data_offsets", {offset, offset + bytes[i]}}};
    offset += bytes[i];
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::exception& e) {  // invalid UTF-8 in a name or metadata
    return InvalidArgument(path + ": cannot encode the header: " + e.what());
  }
  text.append((8 - (8 + text.size()) % 8) % 8, ' ');
  if (text.size() > kMaxSafetensorsHeaderBytes) {
    return InvalidArgument(path + ": header of " + std::to_string(text.size()) +
                           " bytes exceeds the reader's cap of " +
                           std::to_string(kMaxSafetensorsHeaderBytes));
  }
  return text;
}

Status WriteHeader(OutputFile& out, const std::string& header) {
  uint8_t length[8];
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) length[i] = static_cast<uint8_t>(n >> (8 * i));
  G4_RETURN_IF_ERROR(out.Write(length, sizeof(length)));
  return out.Write(header.data(), header.size());
}

Status WriteTensor(OutputFile& out, const TensorSpec& spec, size_t index, uint64_t bytes,
                   const TensorFill& fill) {
  const std::string ctx = out.path() + ": tensor " + Quoted(spec.name);
  TensorSink sink(&out, ctx, bytes);
  const Status filled = fill(index, sink);
  return sink.Finish(filled, " bytes, expected " + std::to_string(bytes) + " (" +
                                 DTypeName(spec.dtype) + " " + ShapeToString(spec.shape) + ")");
}

// WriteSafetensors after ValidateSpecs.
Status WriteValidated(const std::string& path, const std::vector<TensorSpec>& specs,
                      const std::vector<uint64_t>& bytes, const TensorFill& fill,
                      const std::map<std::string, std::string>& metadata) {
  G4_ASSIGN_OR_RETURN(std::string header, BuildHeader(path, specs, bytes, metadata));
  OutputFile out(path);
  G4_RETURN_IF_ERROR(out.Open());
  G4_RETURN_IF_ERROR(WriteHeader(out, header));
  for (size_t i = 0; i < specs.size(); ++i) {
    G4_RETURN_IF_ERROR(WriteTensor(out, specs[i], i, bytes[i], fill));
  }
  return out.Commit();
}

std::string ShardName(size_t k, size_t n) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "model-%05zu-of-%05zu.safetensors", k, n);
  return buf;
}

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// "model-<digits>-of-<digits>.safetensors"
bool IsShardFileName(std::string_view name) {
  constexpr std::string_view kPrefix = "model-", kSuffix = ".safetensors", kOf = "-of-";
  if (!name.starts_with(kPrefix) || !name.ends_with(kSuffix)) return false;
  name = name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
  const size_t of = name.find(kOf);
  return of != std::string_view::npos && AllDigits(name.substr(0, of)) &&
         AllDigits(name.substr(of + kOf.size()));
}

bool IsWeightFileName(const std::string& name) {
  return name == kSingleSafetensorsName || name == kSafetensorsIndexName || IsShardFileName(name);
}

// Deletes weight files of an earlier save that this save did not write.
Status RemoveStaleWeightFiles(const std::string& dir, const std::set<std::string>& keep) {
  std::error_code ec;
  std::vector<fs::path> stale;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (IsWeightFileName(name) && keep.count(name) == 0) stale.push_back(it->path());
  }
  if (ec) return IoError(dir + ": cannot list the directory: " + ec.message());
  for (const fs::path& p : stale) {
    if (!fs::remove(p, ec) && ec) {
      return IoError(p.string() + ": cannot remove a stale weight file: " + ec.message());
    }
  }
  return Status::Ok();
}

// Tensor indices per shard: in order, a new shard when the next tensor would overflow.
std::vector<std::vector<size_t>> PlanShards(const std::vector<uint64_t>& bytes, uint64_t max) {
  std::vector<std::vector<size_t>> shards;
  uint64_t current = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    const bool fits = current <= max && bytes[i] <= max - current;  // no overflow
    if (shards.empty() || (!shards.back().empty() && !fits)) {
      shards.emplace_back();
      current = 0;
    }
    shards.back().push_back(i);
    current += bytes[i];
  }
  return shards;
}

Status WriteIndex(const std::string& path, uint64_t total_size,
                  const std::map<std::string, std::string>& weight_map) {
  nlohmann::json index = {{"metadata", {{"total_size", total_size}}},
                          {"weight_map", weight_map}};
  std::string text;
  try {
    text = index.dump(2) + "\n";
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgument(path + ": cannot encode the index: " + e.what());
  }
  OutputFile out(path);
  G4_RETURN_IF_ERROR(out.Open());
  G4_RETURN_IF_ERROR(out.Write(text.data(), text.size()));
  return out.Commit();
}

}  // namespace

Status WriteSafetensors(const std::string& path, const std::vector<TensorSpec>& specs,
                        const TensorFill& fill,
                        const std::map<std::string, std::string>& metadata) {
  G4_ASSIGN_OR_RETURN(std::vector<uint64_t> bytes, ValidateSpecs(path, specs, fill));
  return WriteValidated(path, specs, bytes, fill, metadata);
}

Status WriteShardedSafetensors(const std::string& dir, const std::vector<TensorSpec>& specs,
                               uint64_t max_shard_bytes, const TensorFill& fill,
                               const std::map<std::string, std::string>& metadata) {
  G4_ASSIGN_OR_RETURN(std::vector<uint64_t> bytes, ValidateSpecs(dir, specs, fill));
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return IoError(dir + ": cannot create the directory: " + ec.message());

  uint64_t total = 0;
  for (uint64_t b : bytes) total += b;  // cannot overflow in practice: these are file sizes
  if (total <= max_shard_bytes) {
    G4_RETURN_IF_ERROR(
        WriteValidated(JoinPath(dir, kSingleSafetensorsName), specs, bytes, fill, metadata));
    return RemoveStaleWeightFiles(dir, {kSingleSafetensorsName});
  }

  const std::vector<std::vector<size_t>> plan = PlanShards(bytes, max_shard_bytes);
  std::map<std::string, std::string> weight_map;
  std::set<std::string> written;
  for (size_t k = 0; k < plan.size(); ++k) {
    const std::string name = ShardName(k + 1, plan.size());
    std::vector<TensorSpec> shard_specs;
    std::vector<uint64_t> shard_bytes;
    for (size_t i : plan[k]) {
      shard_specs.push_back(specs[i]);
      shard_bytes.push_back(bytes[i]);
      weight_map[specs[i].name] = name;
    }
    const std::vector<size_t>& global = plan[k];
    const TensorFill shard_fill = [&](size_t i, ByteSink& sink) { return fill(global[i], sink); };
    G4_RETURN_IF_ERROR(
        WriteValidated(JoinPath(dir, name), shard_specs, shard_bytes, shard_fill, metadata));
    written.insert(name);
  }
  G4_RETURN_IF_ERROR(WriteIndex(JoinPath(dir, kSafetensorsIndexName), total, weight_map));
  written.insert(kSafetensorsIndexName);
  return RemoveStaleWeightFiles(dir, written);
}

}  // namespace g4
