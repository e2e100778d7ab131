// The start of every model command: the backend named by --backend is created and its device
// policy (backend, ISA or compute capability, compute dtype, kernels) logged BEFORE the model is
// loaded, so the policy is the process's first log line and `--backend cuda` without a device
// fails at once instead of after a slow load. The policy depends on the device only; what depends
// on the model (architecture, the weights' storage dtypes, the LM head) is logged after the load,
// on its own line.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "chat/model_tokenizer.h"
#include "core/status.h"
#include "loader/checkpoint.h"
#include "model/causal_lm.h"
#include "model/load_options.h"
#include "ops/backend.h"

namespace g4::cli {

// The options every model command shares.
struct ModelFlags {
  std::string path;             // --model: a checkpoint directory, a .gguf file or ORG/NAME
  std::string revision = "main";  // --revision: of ORG/NAME in the Hugging Face cache
  std::string backend = "cpu";  // --backend
  std::string head = "auto";    // --head
  int threads = 0;              // --threads
  std::string matvec = "exact";  // --matvec
  std::string kv_dtype = "f32";  // --kv-dtype
};

// Registers --model (required), --revision, --backend, --threads, --head, --matvec and
// --kv-dtype.
void AddModelOptions(CLI::App* sub, ModelFlags* flags);

// Parses `name` (cpu, ref, cuda), creates the backend and logs "device policy: ...". The error
// names the backend (e.g. "--backend cuda: no CUDA device: ...").
// kv_dtype: f32 or bf16 (cpu and ref only).
StatusOr<std::unique_ptr<Backend>> OpenBackend(const std::string& name, int threads,
                                               const std::string& matvec = "exact",
                                               const std::string& kv_dtype = "f32");
StatusOr<std::unique_ptr<Backend>> OpenBackend(const ModelFlags& flags);

// A model with the checkpoint it was loaded from (its tokenizer and JSON files come from there).
struct LoadedModel {
  std::shared_ptr<const Checkpoint> checkpoint;
  std::unique_ptr<CausalLM> model;
};

// The load options --head and the backend imply (a device keeps the stored head for "auto").
StatusOr<LoadOptions> LoadOptionsFor(const ModelFlags& flags, const Backend& backend);

// --model as a local path: itself, or ORG/NAME[:FILE.gguf] found in the Hugging Face cache
// (loader/hf_cache.h; never the network).
StatusOr<std::string> ResolveModelFlag(const ModelFlags& flags);

// Opens --model, loads its architecture's model for `backend` and logs
// "model architecture=gemma3 weights=q5_0+q8_0+f32 head=q8_0".
StatusOr<LoadedModel> LoadModelLogged(const ModelFlags& flags, const Backend& backend);

// What a text command starts with, in this order: the backend (its policy line first), the
// model, and the tokenizer and chat style from the same checkpoint (a GGUF file carries both).
struct TextSession {
  std::unique_ptr<Backend> backend;
  LoadedModel loaded;
  ModelTokenizer tokenizer;
  const CausalLM& model() const { return *loaded.model; }
};
StatusOr<TextSession> OpenTextSession(const ModelFlags& flags);

// Logs `status` as an error and returns the exit code 1.
int LogFailure(const Status& status);

}  // namespace g4::cli
