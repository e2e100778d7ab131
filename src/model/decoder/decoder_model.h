// DecoderModel: the part of a CausalLM every Gemma decoder shares. It owns the checkpoint, the
// config, the bound weights and the RoPE tables, and runs a batched step: checks the items,
// reserves their caches, records or replays decode steps (model/step_graphs.h) and takes the
// logits out. Only the ops of the pass itself (RunOps) belong to an architecture.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "loader/checkpoint.h"
#include "model/causal_lm.h"
#include "model/config.h"
#include "model/decoder/weights.h"
#include "model/load_options.h"
#include "model/step_graphs.h"

namespace g4 {

class DecoderModel : public CausalLM {
 public:
  DecoderModel(const DecoderModel&) = delete;
  DecoderModel& operator=(const DecoderModel&) = delete;

  const ModelInfo& info() const override { return info_; }
  const ModelConfig& config() const { return config_; }
  const ModelWeights& weights() const { return weights_; }
  const Checkpoint& checkpoint() const { return *checkpoint_; }
  std::vector<WeightEntry> Weights() const override { return WeightEntries(slots_); }
  const TensorView& lm_head() const override { return weights_.lm_head; }
  uint64_t mapped_bytes() const override { return checkpoint_->mapped_bytes(); }

 protected:
  DecoderModel() = default;

  // The tensor list of an architecture: slots pointing into *w (model/decoder/weights.h).
  using SlotList = std::vector<TensorSlot> (*)(const ModelConfig& config, ModelWeights* w);
  // Keeps the checkpoint, binds list(config)'s tensors from it and fills the RoPE tables and the
  // info (architecture = the registry's name).
  Status Bind(std::shared_ptr<const Checkpoint> checkpoint, ModelConfig config,
              std::string architecture, SlotList list, const LoadOptions& options);
  // For load-time changes of bound weights (e.g. Gemma 3's 1 + w norms), before the first pass.
  ModelWeights& mutable_weights() { return weights_; }

  // The ops of one pass over stacked rows (ids and positions already in ws): everything from
  // the embedding to ws.logits ([N, vocab]); no upload, download or allocation once ws has
  // held the same shapes, so it can be recorded. row_begin: [B + 1]; N: rows with logits.
  virtual Status RunOps(Backend& be, ForwardWorkspace& ws, std::span<const BatchItem> items,
                        const std::vector<int64_t>& row_begin, int64_t N,
                        ForwardTrace* trace) const = 0;
  // Layer `layer`'s RoPE inverse frequencies in the workspace's memory ([head_dim / 2]).
  const float* InvFreq(const ForwardWorkspace& ws, int layer) const {
    return ws.inv_freq.data() + rope_at_[static_cast<size_t>(layer)];
  }

 private:
  StatusOr<std::vector<std::vector<float>>> DoForwardBatch(Backend& backend,
                                                           std::span<const BatchItem> items,
                                                           ForwardTrace* trace,
                                                           StepGraphs* graphs) const override;

  std::shared_ptr<const Checkpoint> checkpoint_;
  ModelConfig config_;
  ModelWeights weights_;
  std::vector<TensorSlot> slots_;  // point into weights_
  ModelInfo info_;
  // Every layer's RoPE inverse frequencies, concatenated ([hd / 2] each, at rope_at_[layer]):
  // uploaded by each forward as one buffer rather than recomputed per layer and step.
  std::vector<float> rope_inv_freq_;
  std::vector<size_t> rope_at_;
};

}  // namespace g4
