// compressed-tensors "pack-quantized" checkpoints (W4A16, e.g. Google's *-qat-w4a16-ct): the
// `quantization_config` of config.json and the names of a quantized linear's tensors. Must match
// ../shared/spec/formats.md §1: quant_method "compressed-tensors", format "pack-quantized",
// weights symmetric int4 (nibble = q + 8) grouped along the input dimension, scales in a float
// dtype; per quantized linear P: P.weight_packed (I32 [N, ceil(K*4/32)]), P.weight_scale
// ([N, K/group]), P.weight_shape (I64 or I32 [2] = [N, K]). What g4 does not run (asymmetric
// zero points, act-order g_idx, other bit widths or formats, quantized activations) is refused
// with a message naming the field.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace g4 {

// The weight arguments every config group shares (g4 runs one scheme per checkpoint).
struct CompressedTensorsConfig {
  int num_bits = 4;
  bool per_channel = false;    // strategy "channel": one scale per output row
  int64_t group_size = 32;     // strategy "group"
  std::vector<std::string> ignore;  // module names / "re:" regexes left in float (informational)

  // The group size of a linear with input width K.
  int64_t GroupSizeFor(int64_t K) const { return per_channel ? K : group_size; }
};

// Tensor-name suffixes of a quantized linear (appended to the module name, e.g.
// "model.language_model.layers.0.mlp.up_proj").
inline constexpr char kWeightPackedSuffix[] = ".weight_packed";
inline constexpr char kWeightScaleSuffix[] = ".weight_scale";
inline constexpr char kWeightShapeSuffix[] = ".weight_shape";
inline constexpr char kWeightZeroPointSuffix[] = ".weight_zero_point";
inline constexpr char kWeightGIdxSuffix[] = ".weight_g_idx";

// Reads config["quantization_config"]: nullopt when absent or null; the parsed scheme when it is a
// supported compressed-tensors config; otherwise an error whose message names `source` and the
// offending field (e.g. "config.json: quantization_config.config_groups.group_0.weights.symmetric
// is false: asymmetric (zero-point) checkpoints are not supported").
StatusOr<std::optional<CompressedTensorsConfig>> ParseQuantizationConfig(
    const nlohmann::json& config, const std::string& source = "config.json");

// Reads DIR/config.json and parses its quantization_config as above.
StatusOr<std::optional<CompressedTensorsConfig>> LoadQuantizationConfig(const std::string& dir);

// The quantization_config object a W4A16 export carries (what `g4 make-model --quant w4a16`
// writes): one group targeting Linear, symmetric int4, strategy group, `group_size`, and `ignore`.
nlohmann::ordered_json MakeW4A16QuantizationConfig(int64_t group_size,
                                                   const std::vector<std::string>& ignore);

}  // namespace g4
