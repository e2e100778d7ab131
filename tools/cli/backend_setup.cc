#include "backend_setup.h"

#include "core/log.h"

namespace g4::cli {

StatusOr<std::unique_ptr<Backend>> OpenBackend(const std::string& name, int threads) {
  G4_ASSIGN_OR_RETURN(const BackendKind kind, ParseBackendKind(name));
  G4_ASSIGN_OR_RETURN(std::unique_ptr<Backend> backend, Backend::Create(kind, threads));
  LogInfo("device policy: " + backend->PolicyString());
  return backend;
}

StatusOr<std::unique_ptr<Gemma4Model>> LoadModelLogged(const std::string& dir) {
  G4_ASSIGN_OR_RETURN(std::unique_ptr<Gemma4Model> model, Gemma4Model::Load(dir));
  LogInfo("model weights=" + model->WeightDTypes());
  return model;
}

}  // namespace g4::cli
