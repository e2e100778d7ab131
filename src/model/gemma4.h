// Gemma4Model: a loaded Gemma 4 text decoder (config + weights mapped from the checkpoint) and
// its forward pass, written once against the op interface (ops/backend.h). Every step follows
// ../shared/spec/gemma4.md §2 in order; activations are f32, weights stay in their file dtype.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "loader/gguf.h"
#include "loader/weight_store.h"
#include "model/config.h"
#include "model/kv_store.h"
#include "model/step_graphs.h"
#include "model/weights.h"
#include "ops/backend.h"

namespace g4 {

// Optional debugging outputs of a forward pass, laid out like the golden hidden.f32 / ple.f32.
struct ForwardTrace {
  std::vector<float> ple;     // [T, L, P]
  std::vector<float> hidden;  // [L + 1, T, H]: x0, then each layer's output after layer_scalar
};

class Gemma4Model {
 public:
  // Reads DIR/config.json (+ generation_config.json) and maps the safetensors; or, when `path`
  // is a regular file that starts with the GGUF magic or ends in ".gguf", maps that GGUF file
  // (config from its gemma4 metadata, model/gguf_config.h). Validates every tensor's presence,
  // dtype and shape before returning. Logs nothing (except GGUF tensors no slot reads).
  static StatusOr<std::unique_ptr<Gemma4Model>> Load(const std::string& path);
  static StatusOr<std::unique_ptr<Gemma4Model>> LoadGguf(const std::string& path);
  // True when Load(path) would read `path` as a GGUF file.
  static bool IsGgufPath(const std::string& path);

  const ModelConfig& config() const { return config_; }
  const ModelWeights& weights() const { return weights_; }
  // The safetensors store; only for models loaded from a directory (see is_gguf()).
  const WeightStore& store() const { return *store_; }
  bool is_gguf() const { return gguf_ != nullptr; }
  // The GGUF file (tokenizer metadata lives there); null for safetensors models.
  const GgufFile* gguf() const { return gguf_.get(); }
  // Bytes of checkpoint files mapped (all shards, or the GGUF file).
  uint64_t mapped_bytes() const;
  // "bf16", "f32", "f16", or e.g. "bf16+f32" when the checkpoint mixes dtypes.
  std::string WeightDTypes() const;

  struct ForwardOptions {
    int32_t start_pos = 0;         // absolute position of ids[0]
    KvStore* cache = nullptr;      // null: ids is the whole sequence (start_pos must be 0)
    bool last_logits_only = false; // compute the head for the last position only
    ForwardTrace* trace = nullptr;
    StepGraphs* graphs = nullptr;  // records and replays decode steps (model/step_graphs.h)
  };

  // Runs ids[0..T) at positions start_pos..start_pos+T-1. Without a cache this is the full
  // forward of a fresh sequence; with one, earlier positions come from the cache and the
  // chunk's K/V are added to it (prefill chunks and decode steps). Returns logits [T, vocab]
  // (or [1, vocab] with last_logits_only).
  StatusOr<std::vector<float>> Forward(Backend& backend, std::span<const int32_t> ids,
                                       const ForwardOptions& options) const;
  StatusOr<std::vector<float>> Forward(Backend& backend, std::span<const int32_t> ids) const {
    return Forward(backend, ids, ForwardOptions{});
  }

  // One sequence's part of a batched step: a chunk of its tokens and its own cache.
  struct BatchItem {
    std::span<const int32_t> ids;
    int32_t start_pos = 0;
    KvStore* cache = nullptr;       // required when start_pos > 0 or with other items
    bool last_logits_only = true;
  };

  // Runs several sequences in one pass over the weights (continuous batching): their tokens
  // are stacked for every matmul and norm, and each attends only over its own cache. Returns
  // each item's logits ([T_i, vocab], or [1, vocab] with last_logits_only), in item order.
  // `trace` (single item only) records x0/PLE/hidden states. With `graphs` and a backend that
  // records op graphs, a decode step (every item one token with its cache, last logits only)
  // runs op by op the first time its batch size comes, is recorded the next and replayed while
  // the batch's caches stay the ones recorded over (model/step_graphs.h); the logits are the
  // same either way.
  StatusOr<std::vector<std::vector<float>>> ForwardBatch(Backend& backend,
                                                         std::span<const BatchItem> items,
                                                         ForwardTrace* trace = nullptr,
                                                         StepGraphs* graphs = nullptr) const;

 private:
  Gemma4Model() = default;
  // Fills rope_inv_freq_ from config_ (after either Load).
  void PrepareRope();
  // The ops of one pass over stacked rows (ids and positions already in ws): everything from
  // the embedding to ws.logits ([N, vocab]); no upload, download or allocation once ws has
  // held the same shapes, so it can be recorded. row_begin: [B + 1]; N: rows with logits.
  Status RunOps(Backend& be, ForwardWorkspace& ws, std::span<const BatchItem> items,
                const std::vector<int64_t>& row_begin, int64_t N, ForwardTrace* trace) const;

  ModelConfig config_;
  // Every layer's RoPE inverse frequencies, concatenated ([hd / 2] each, at rope_at_[layer]):
  // uploaded by each forward as one buffer rather than recomputed per layer and step.
  std::vector<float> rope_inv_freq_;
  std::vector<size_t> rope_at_;
  std::unique_ptr<WeightStore> store_;
  std::unique_ptr<GgufFile> gguf_;  // keeps a GGUF model's tensors mapped
  ModelWeights weights_;
};

}  // namespace g4
