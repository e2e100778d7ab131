// CausalLM: what the runtime, the engine, g4 bench and the server know of a model. Every
// architecture (model/gemma4, model/gemma3, ...) implements it; nothing outside model/ names a
// concrete model class or its config. The registry (model/registry.h) makes one from a
// checkpoint.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "model/kv_store.h"
#include "model/step_graphs.h"
#include "ops/backend.h"

namespace g4 {

// One decoder layer's attention memory: what a KV cache must hold for it.
struct KvLayout {
  enum class Kind { kSliding, kFull };
  int index = 0;
  Kind kind = Kind::kFull;
  int window = 0;      // sliding: keys a query sees, itself included (W); 0 for full layers
  int n_kv_heads = 0;
  int head_dim = 0;
  int donor = 0;       // `index` when the layer owns its K/V, else the layer whose K/V it reads
  int n_heads = 0;     // query heads attending over it (for cost estimates)
  bool sliding() const { return kind == Kind::kSliding; }
  bool shared() const { return donor != index; }
};

// What a model is, for its callers.
struct ModelInfo {
  std::string architecture;  // the registry's name, e.g. "gemma4", "gemma3"
  int vocab_size = 0;        // logits per row
  int input_vocab = 0;       // ids the model accepts: [0, input_vocab) (<= vocab_size)
  int hidden_size = 0;
  int max_context = 0;       // positions a sequence may hold (max_position_embeddings)
  int bos_id = -1, pad_id = -1;
  std::vector<int> eos_ids;  // ids that end generation, as the checkpoint lists them
  std::vector<KvLayout> layers;
};

// Optional debugging outputs of a forward pass, laid out like the golden hidden.f32 / ple.f32.
struct ForwardTrace {
  std::vector<float> ple;     // [T, L, P] (Gemma 4 per-layer inputs; empty elsewhere)
  std::vector<float> hidden;  // [L + 1, T, H]: x0, then each layer's output
};

// A weight the forward pass reads, for byte and cost accounting (g4 bench).
struct WeightEntry {
  std::string name;
  const TensorView* view = nullptr;
  bool gathered = false;  // an embedding table: one row per token is read, not the whole
  bool linear = false;    // a matmul weight: 2 * N * K flops per row
  // An [E, N, K] stack of experts of which a token reads this many (MoE); 0: not experts.
  int64_t experts_read = 0;
};

class CausalLM {
 public:
  virtual ~CausalLM() = default;

  virtual const ModelInfo& info() const = 0;

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
  // `trace` (single item only) records the hidden states. With `graphs` and a backend that
  // records op graphs, a decode step (every item one token with its cache, last logits only)
  // runs op by op the first time its batch size comes, is recorded the next and replayed while
  // the batch's caches stay the ones recorded over (model/step_graphs.h); the logits are the
  // same either way.
  StatusOr<std::vector<std::vector<float>>> ForwardBatch(Backend& backend,
                                                         std::span<const BatchItem> items,
                                                         ForwardTrace* trace = nullptr,
                                                         StepGraphs* graphs = nullptr) const {
    return DoForwardBatch(backend, items, trace, graphs);
  }

  struct ForwardOptions {
    int32_t start_pos = 0;          // absolute position of ids[0]
    KvStore* cache = nullptr;       // null: ids is the whole sequence (start_pos must be 0)
    bool last_logits_only = false;  // compute the head for the last position only
    ForwardTrace* trace = nullptr;
    StepGraphs* graphs = nullptr;   // records and replays decode steps (model/step_graphs.h)
  };
  // Runs ids[0..T) at positions start_pos..start_pos+T-1: without a cache the full forward of a
  // fresh sequence; with one, earlier positions come from the cache and the chunk's K/V are
  // added to it (prefill chunks and decode steps). Returns logits [T, vocab] (or [1, vocab]).
  StatusOr<std::vector<float>> Forward(Backend& backend, std::span<const int32_t> ids,
                                       const ForwardOptions& options) const;
  StatusOr<std::vector<float>> Forward(Backend& backend, std::span<const int32_t> ids) const {
    return Forward(backend, ids, ForwardOptions{});
  }

  // Every weight the forward pass reads except the LM head, and the head as it runs.
  virtual std::vector<WeightEntry> Weights() const = 0;
  virtual const TensorView& lm_head() const = 0;
  // Bytes of checkpoint files mapped.
  virtual uint64_t mapped_bytes() const = 0;

 protected:
  virtual StatusOr<std::vector<std::vector<float>>> DoForwardBatch(
      Backend& backend, std::span<const BatchItem> items, ForwardTrace* trace,
      StepGraphs* graphs) const = 0;
};

// Bytes of weights one decode step reads: every weight the forward pass streams (linears,
// norms, the LM head as bound), plus one row of each embedding table (a gather, not a stream)
// and, of an MoE layer's experts, the top-k a token chooses.
// Quantized tensors count their packed bytes and scales.
uint64_t DecodeWeightBytes(const CausalLM& model);
// The same bytes by storage ("int4g32/bf16" -> bytes); the head's key ends in " (lm head)".
std::map<std::string, uint64_t> DecodeBytesByStorage(const CausalLM& model);
// "bf16", "f32", or e.g. "bf16+int4g32/bf16" when the checkpoint mixes storages.
std::string WeightDTypes(const CausalLM& model);
// 2 * N * K summed over the linears (the head excluded; MoE experts: the top-k chosen): flops
// per token of the matmuls.
double LinearFlopsPerToken(const CausalLM& model);
// The layers that own K/V.
int NumKvOwningLayers(const ModelInfo& info);

}  // namespace g4
