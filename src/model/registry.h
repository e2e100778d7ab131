// The model registry: from a checkpoint's declared architecture (config.json model_type or
// architectures; GGUF general.architecture) to the factory of the model that runs it. Adding
// an architecture is one entry in registry.cc and its own folder under model/.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "loader/checkpoint.h"
#include "model/causal_lm.h"
#include "model/load_options.h"

namespace g4 {

using ModelFactory = StatusOr<std::unique_ptr<CausalLM>> (*)(std::shared_ptr<const Checkpoint>,
                                                             const LoadOptions&);

struct Architecture {
  std::string_view name;                            // ModelInfo::architecture
  std::vector<std::string_view> hf_model_types;     // config.json model_type
  std::vector<std::string_view> hf_architectures;   // config.json architectures[]
  std::vector<std::string_view> gguf_names;         // GGUF general.architecture
  ModelFactory create = nullptr;
};

// Every architecture g4 runs.
std::span<const Architecture> Architectures();

// The architecture `checkpoint` declares, or Unimplemented naming what it declares and what g4
// runs.
StatusOr<const Architecture*> FindArchitecture(const Checkpoint& checkpoint);

// The model of a checkpoint (already opened, shared with its tokenizer) or of a path (a
// checkpoint directory or a .gguf file).
StatusOr<std::unique_ptr<CausalLM>> LoadCausalLM(std::shared_ptr<const Checkpoint> checkpoint,
                                                 const LoadOptions& options = {});
StatusOr<std::unique_ptr<CausalLM>> LoadCausalLM(const std::string& path,
                                                 const LoadOptions& options = {});

}  // namespace g4
