#include "backend_setup.h"

#include "core/log.h"
#include "model/weights.h"

namespace g4::cli {

void AddModelOptions(CLI::App* sub, std::string* model, std::string* backend, int* threads) {
  sub->add_option("--model", *model,
                  "Checkpoint directory (config.json, safetensors, tokenizer.json) or .gguf file")
      ->required();
  sub->add_option("--backend", *backend, "cpu (SIMD, threaded), ref (scalar oracle) or cuda");
  sub->add_option("--threads", *threads, "Threads for the cpu backend (0: all cores)");
}

StatusOr<std::unique_ptr<Backend>> OpenBackend(const std::string& name, int threads) {
  G4_ASSIGN_OR_RETURN(const BackendKind kind, ParseBackendKind(name));
  G4_ASSIGN_OR_RETURN(std::unique_ptr<Backend> backend, Backend::Create(kind, threads));
  LogInfo("device policy: " + backend->PolicyString());
  // Before any model is loaded: the LM head copy is made at load.
  if (backend->memory().is_device()) SetDefaultHeadMode(HeadModeForDevice(DefaultHeadMode()));
  return backend;
}

StatusOr<std::unique_ptr<Gemma4Model>> LoadModelLogged(const std::string& dir) {
  G4_ASSIGN_OR_RETURN(std::unique_ptr<Gemma4Model> model, Gemma4Model::Load(dir));
  LogInfo("model weights=" + model->WeightDTypes());
  return model;
}

}  // namespace g4::cli
