#include "model/registry.h"

#include <algorithm>

#include "model/gemma3/model.h"
#include "model/gemma4/model.h"

namespace g4 {
namespace {

template <class Model>
StatusOr<std::unique_ptr<CausalLM>> Create(std::shared_ptr<const Checkpoint> checkpoint,
                                           const LoadOptions& options) {
  G4_ASSIGN_OR_RETURN(std::unique_ptr<Model> m, Model::Create(std::move(checkpoint), options));
  return std::unique_ptr<CausalLM>(std::move(m));
}

const Architecture kArchitectures[] = {
    {"gemma4",
     {"gemma4", "gemma4_text"},
     {"Gemma4ForConditionalGeneration", "Gemma4ForCausalLM"},
     {"gemma4"},
     &Create<Gemma4Model>},
    {"gemma3",
     {"gemma3", "gemma3_text"},
     {"Gemma3ForConditionalGeneration", "Gemma3ForCausalLM"},
     {"gemma3"},
     &Create<Gemma3Model>},
};

bool Contains(const std::vector<std::string_view>& list, std::string_view s) {
  return std::find(list.begin(), list.end(), s) != list.end();
}

}  // namespace

std::span<const Architecture> Architectures() { return kArchitectures; }

StatusOr<const Architecture*> FindArchitecture(const Checkpoint& c) {
  for (const Architecture& a : kArchitectures) {
    if (c.is_gguf() ? Contains(a.gguf_names, c.architecture())
                    : Contains(a.hf_model_types, c.architecture())) {
      return &a;
    }
  }
  if (!c.is_gguf() && c.architecture().empty()) {  // an old config.json: architectures only
    for (const Architecture& a : kArchitectures) {
      for (const std::string& name : c.hf_architectures()) {
        if (Contains(a.hf_architectures, name)) return &a;
      }
    }
  }
  std::string known;
  for (const Architecture& a : kArchitectures) {
    const auto& names = c.is_gguf() ? a.gguf_names : a.hf_model_types;
    for (std::string_view n : names) known += (known.empty() ? "" : ", ") + std::string(n);
  }
  const std::string where =
      c.is_gguf() ? c.path() + ": general.architecture" : c.FilePath("config.json") + ": model_type";
  return Unimplemented(where + " is '" + c.architecture() + "'; g4 runs " + known);
}

StatusOr<std::unique_ptr<CausalLM>> LoadCausalLM(std::shared_ptr<const Checkpoint> checkpoint,
                                                 const LoadOptions& options) {
  G4_ASSIGN_OR_RETURN(const Architecture* arch, FindArchitecture(*checkpoint));
  return arch->create(std::move(checkpoint), options);
}

StatusOr<std::unique_ptr<CausalLM>> LoadCausalLM(const std::string& path,
                                                 const LoadOptions& options) {
  G4_ASSIGN_OR_RETURN(std::shared_ptr<const Checkpoint> checkpoint, Checkpoint::Open(path));
  return LoadCausalLM(std::move(checkpoint), options);
}

}  // namespace g4
