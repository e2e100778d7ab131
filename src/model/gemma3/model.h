// Gemma3Model: the Gemma 3 text decoder (../shared/spec/gemma3.md) on the shared decoder blocks
// (model/decoder/blocks.h): the scaled embedding, per layer the attention sub-block (q/k norms,
// no v-norm, queries scaled by query_pre_attn_scalar^-0.5, one head dim, every layer its own
// K/V) and the gated MLP, then the final norm and the tied head. Hugging Face checkpoints store
// RMSNorm weights as w for x * (1 + w): they are run as f32 copies of 1 + w made at load; GGUF
// files already hold 1 + w (llama.cpp's converter added it).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "loader/checkpoint.h"
#include "model/decoder/decoder_model.h"
#include "model/load_options.h"

namespace g4 {

class Gemma3Model : public DecoderModel {
 public:
  // The registry's factory: reads the config (config.json or GGUF gemma3.* metadata) and binds
  // every tensor, validating presence, dtype and shape before returning.
  static StatusOr<std::unique_ptr<Gemma3Model>> Create(std::shared_ptr<const Checkpoint> checkpoint,
                                                       const LoadOptions& options = {});

 private:
  Gemma3Model() = default;
  Status RunOps(Backend& be, ForwardWorkspace& ws, std::span<const BatchItem> items,
                const std::vector<int64_t>& row_begin, int64_t N,
                ForwardTrace* trace) const override;
};

}  // namespace g4
