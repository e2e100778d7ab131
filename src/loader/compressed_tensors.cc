// Parsing and writing compressed-tensors' quantization_config; see compressed_tensors.h and
// ../shared/spec/formats.md §1.1 (fields) and §1.6 (loader checklist). Every JSON access checks
// the type first: nlohmann's get<>() would throw, and nothing may throw past the library API.
#include "loader/compressed_tensors.h"

#include <filesystem>

#include "loader/json_file.h"

namespace g4 {
namespace {

using nlohmann::json;

bool IsNull(const json& obj, const char* key) { return !obj.contains(key) || obj[key].is_null(); }

std::string StringOr(const json& obj, const char* key, const std::string& fallback) {
  return obj.contains(key) && obj[key].is_string() ? obj[key].get<std::string>() : fallback;
}

// The weight arguments of one config group; `where` is e.g.
// "config.json: quantization_config.config_groups.group_0.".
StatusOr<CompressedTensorsConfig> ParseGroup(const json& group, const std::string& where) {
  if (!group.is_object()) return InvalidArgument(where + " must be an object");
  const std::string format = StringOr(group, "format", "pack-quantized");
  if (format != "pack-quantized") {
    return Unimplemented(where + "format '" + format +
                         "' is not supported (g4 reads pack-quantized only)");
  }
  if (!IsNull(group, "input_activations")) {
    return Unimplemented(where + "input_activations is set: quantized activations (W4A8, W8A8) "
                         "are not supported; g4 runs weight-only W4A16");
  }
  if (!IsNull(group, "output_activations")) {
    return Unimplemented(where + "output_activations is set: not supported (weight-only only)");
  }
  if (!group.contains("weights") || !group["weights"].is_object()) {
    return InvalidArgument(where + "weights is missing or not an object");
  }
  const json& w = group["weights"];
  const std::string ww = where + "weights.";
  CompressedTensorsConfig c;
  if (!w.contains("num_bits") || !w["num_bits"].is_number_integer()) {
    return InvalidArgument(ww + "num_bits is missing or not an integer");
  }
  c.num_bits = w["num_bits"].get<int>();
  if (c.num_bits != 4) {
    return Unimplemented(ww + "num_bits = " + std::to_string(c.num_bits) +
                         ": only 4-bit weights are supported");
  }
  const std::string type = StringOr(w, "type", "int");
  if (type != "int") {
    return Unimplemented(ww + "type '" + type + "' is not supported (expected int)");
  }
  if (!w.contains("symmetric") || !w["symmetric"].is_boolean()) {
    return InvalidArgument(ww + "symmetric is missing or not true/false");
  }
  if (!w["symmetric"].get<bool>()) {
    return Unimplemented(ww + "symmetric is false: asymmetric (zero-point) checkpoints are not "
                         "supported");
  }
  if (!IsNull(w, "actorder") && !(w["actorder"].is_boolean() && !w["actorder"].get<bool>())) {
    return Unimplemented(ww + "actorder = " + w["actorder"].dump() +
                         ": act-order (g_idx) checkpoints are not supported");
  }
  if (w.contains("dynamic") && w["dynamic"].is_boolean() && w["dynamic"].get<bool>()) {
    return Unimplemented(ww + "dynamic is true: dynamic weight quantization is not supported");
  }
  if (!IsNull(w, "block_structure")) {
    return Unimplemented(ww + "block_structure is set: block quantization is not supported");
  }
  const std::string strategy = StringOr(w, "strategy", "");
  if (strategy == "channel") {
    c.per_channel = true;
    c.group_size = 0;
  } else if (strategy == "group") {
    if (!w.contains("group_size") || !w["group_size"].is_number_integer() ||
        w["group_size"].get<int64_t>() <= 0) {
      return InvalidArgument(ww + "group_size must be a positive integer with strategy group");
    }
    c.group_size = w["group_size"].get<int64_t>();
  } else {
    return Unimplemented(ww + "strategy '" + strategy +
                         "' is not supported (expected group or channel)");
  }
  return c;
}

}  // namespace

StatusOr<std::optional<CompressedTensorsConfig>> ParseQuantizationConfig(const json& config,
                                                                         const std::string& source) {
  if (!config.is_object() || IsNull(config, "quantization_config")) {
    return std::optional<CompressedTensorsConfig>();
  }
  const json& q = config["quantization_config"];
  const std::string where = source + ": quantization_config.";
  if (!q.is_object()) return InvalidArgument(source + ": quantization_config must be an object");
  const std::string method = StringOr(q, "quant_method", "");
  if (method != "compressed-tensors") {
    return Unimplemented(where + "quant_method '" + method +
                         "' is not supported (g4 reads compressed-tensors pack-quantized)");
  }
  const std::string format = StringOr(q, "format", "");
  if (format != "pack-quantized" && format != "mixed-precision") {
    return Unimplemented(where + "format '" + format +
                         "' is not supported (g4 reads pack-quantized)");
  }
  if (!IsNull(q, "kv_cache_scheme")) {
    return Unimplemented(where + "kv_cache_scheme is set: quantized KV caches are not supported");
  }
  if (q.contains("sparsity_config") && q["sparsity_config"].is_object() &&
      !q["sparsity_config"].empty()) {
    const std::string sf = StringOr(q["sparsity_config"], "format", "dense");
    if (sf != "dense") {
      return Unimplemented(where + "sparsity_config.format '" + sf + "' is not supported");
    }
  }
  if (!q.contains("config_groups") || !q["config_groups"].is_object() ||
      q["config_groups"].empty()) {
    return InvalidArgument(where + "config_groups is missing or empty");
  }
  std::optional<CompressedTensorsConfig> out;
  for (const auto& [name, group] : q["config_groups"].items()) {
    // A group may carry its own format ("mixed-precision" at the top): it must be pack-quantized.
    const json& g = group;
    if (g.is_object() && !g.contains("format") && format == "mixed-precision") {
      return Unimplemented(where + "config_groups." + name +
                           " has no format under mixed-precision (g4 reads pack-quantized)");
    }
    G4_ASSIGN_OR_RETURN(CompressedTensorsConfig c,
                        ParseGroup(g, where + "config_groups." + name + "."));
    if (out && (out->per_channel != c.per_channel || out->group_size != c.group_size ||
                out->num_bits != c.num_bits)) {
      return Unimplemented(where + "config_groups." + name +
                           " differs from an earlier group: one weight scheme per checkpoint");
    }
    out = c;
  }
  if (q.contains("ignore")) {
    if (!q["ignore"].is_array()) return InvalidArgument(where + "ignore must be a list");
    for (const json& e : q["ignore"]) {
      if (!e.is_string()) return InvalidArgument(where + "ignore entries must be strings");
      out->ignore.push_back(e.get<std::string>());
    }
  }
  return out;
}

StatusOr<std::optional<CompressedTensorsConfig>> LoadQuantizationConfig(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / "config.json").string();
  G4_ASSIGN_OR_RETURN(json config, ReadJsonFile(path));
  return ParseQuantizationConfig(config, path);
}

nlohmann::ordered_json MakeW4A16QuantizationConfig(int64_t group_size,
                                                   const std::vector<std::string>& ignore) {
  nlohmann::ordered_json weights;
  weights["num_bits"] = 4;
  weights["type"] = "int";
  weights["symmetric"] = true;
  weights["strategy"] = "group";
  weights["group_size"] = group_size;
  weights["dynamic"] = false;
  weights["actorder"] = nullptr;
  weights["block_structure"] = nullptr;
  weights["observer"] = "minmax";
  weights["observer_kwargs"] = nlohmann::ordered_json::object();
  nlohmann::ordered_json group;
  group["targets"] = {"Linear"};
  group["weights"] = weights;
  group["input_activations"] = nullptr;
  group["output_activations"] = nullptr;
  group["format"] = "pack-quantized";
  nlohmann::ordered_json q;
  q["quant_method"] = "compressed-tensors";
  q["format"] = "pack-quantized";
  q["quantization_status"] = "compressed";
  q["config_groups"] = {{"group_0", group}};
  q["ignore"] = ignore;
  q["kv_cache_scheme"] = nullptr;
  q["global_compression_ratio"] = nullptr;
  q["sparsity_config"] = nlohmann::ordered_json::object();
  q["transform_config"] = nlohmann::ordered_json::object();
  q["version"] = "0.12.2";
  return q;
}

}  // namespace g4
