// Synthetic checkpoints: a real-format Gemma 4 checkpoint directory (config.json shaped like
// the released multimodal one, generation_config.json, safetensors with the released tensor
// names, sharded above 4 GB, the unused k/v tensors of KV-shared layers included) filled with
// seeded random weights scaled so activations stay finite and every part of the network
// matters (the scheme of ../shared/reference/make_tiny.py). Used by `g4 make-model`, tests and
// benchmarks, so none of them needs a download.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/dtype.h"
#include "core/status.h"
#include "loader/gguf_writer.h"

namespace g4 {

struct SyntheticOptions {
  std::string preset = "tiny";  // tiny | e2b | e4b | 31b-like | 26b-a4b | 26b-a4b-like
  DType dtype = DType::kBF16;   // F32 or BF16
  uint64_t seed = 0;
  // Overrides of the preset (unset = keep the preset's value).
  std::optional<int> layers, hidden, vocab, heads, kv_heads, intermediate, window, kv_shared_layers,
      ple_dim, head_dim, global_head_dim;
  uint64_t max_shard_bytes = uint64_t{4} << 30;
  // "w4a16": linears whose input width the group divides are written pack-quantized
  // (compressed-tensors, symmetric int4, bf16 scales; quantized from the same random values the
  // float checkpoint has) with a quantization_config whose ignore list names the rest, as the
  // released -qat-w4a16-ct exports do. "": every tensor in `dtype`.
  std::string quant;
  int quant_group = 32;
  bool text_only_layout = false;  // "model." prefix and a flat gemma4_text config
  // Called with the tensor bytes written so far, after each write (make-model's progress).
  std::function<void(uint64_t bytes)> on_bytes;
};

// The config.json object the options describe (validated by ParseModelConfig).
StatusOr<nlohmann::ordered_json> SyntheticConfig(const SyntheticOptions& options);

// Writes config.json, generation_config.json and the safetensors into out_dir (created).
Status WriteSyntheticCheckpoint(const SyntheticOptions& options, const std::string& out_dir);

// Adds the tokenizer.* keys of a GGUF file (see tokenizer/gguf_vocab.h); the model library does
// not depend on the tokenizer, so the caller supplies it.
using GgufTokenizerWriter = std::function<Status(GgufMetadata*)>;

// Writes the same model (same seed -> the same values) as one GGUF file at `path`, with
// llama.cpp's gemma4 names and metadata (../shared/spec/peers.md §1.2-1.3, §3.3). `gguf_quant`:
//   "" / "f32" / "f16" / "bf16": 2-D tensors in that type ("": options.dtype);
//   "q8_0": linears and embeddings Q8_0;
//   "q4_0": linears Q4_0, token_embd and per_layer_token_embd Q6_K (Google's QAT layout).
// A matrix whose row length the block does not divide falls back to Q8_0, then F32; 1-D
// tensors (norms, layer scales, rope_freqs) are always F32. `tokenizer` null: a synthetic
// vocabulary with Gemma 4's special ids (peers.md §3.4). Streams: the file never sits in memory.
Status WriteSyntheticGguf(const SyntheticOptions& options, const std::string& gguf_quant,
                          const GgufTokenizerWriter& tokenizer, const std::string& path);

}  // namespace g4
