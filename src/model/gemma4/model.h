// Gemma4Model: the Gemma 4 text decoder (config + weights mapped from the checkpoint) and its
// forward pass, written once against the op interface through the shared decoder blocks
// (model/decoder/blocks.h). Every step follows ../shared/spec/gemma4.md §2 in order: the scaled
// embedding, the per-layer inputs (PLE, E2B/E4B), per layer the attention and MLP sub-blocks (KV
// sharing, the v-norm, 256/512 head dims, the layer scalar) and the PLE injection, then the
// final norm, the tied head and the softcap. Activations are f32; weights stay in their file
// dtype.
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

class Gemma4Model : public DecoderModel {
 public:
  // The registry's factory: reads the config (config.json or GGUF gemma4.* metadata) and binds
  // every tensor, validating presence, dtype and shape before returning.
  static StatusOr<std::unique_ptr<Gemma4Model>> Create(std::shared_ptr<const Checkpoint> checkpoint,
                                                       const LoadOptions& options = {});
  // Opens `path` (a checkpoint directory or a GGUF file) and creates the model.
  static StatusOr<std::unique_ptr<Gemma4Model>> Load(const std::string& path,
                                                     const LoadOptions& options = {});

 private:
  Gemma4Model() = default;
  Status RunOps(Backend& be, ForwardWorkspace& ws, std::span<const BatchItem> items,
                const std::vector<int64_t>& row_begin, int64_t N,
                ForwardTrace* trace) const override;
};

}  // namespace g4
