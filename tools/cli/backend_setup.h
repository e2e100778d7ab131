// The start of every model command: the backend named by --backend is created and its device
// policy (backend, ISA or compute capability, compute dtype, kernels) logged BEFORE the model is
// loaded, so the policy is the process's first log line and `--backend cuda` without a device
// fails at once instead of after a slow load. The policy depends on the device only; what depends
// on the model (the weights' storage dtypes) is logged after the load, on its own line.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "core/status.h"
#include "model/gemma4.h"
#include "ops/backend.h"

namespace g4::cli {

// The options every model command shares: --model (required), --backend, --threads.
void AddModelOptions(CLI::App* sub, std::string* model, std::string* backend, int* threads);

// Parses `name` (cpu, ref, cuda), creates the backend and logs "device policy: ...". The error
// names the backend (e.g. "--backend cuda: no CUDA device: ...").
StatusOr<std::unique_ptr<Backend>> OpenBackend(const std::string& name, int threads);

// Loads the checkpoint directory or .gguf file `dir` and logs "model weights=..." (e.g.
// "bf16", "int4g32/bf16+bf16").
StatusOr<std::unique_ptr<Gemma4Model>> LoadModelLogged(const std::string& dir);

}  // namespace g4::cli
