#include "backend_setup.h"

#include "core/log.h"
#include "loader/hf_cache.h"
#include "model/registry.h"

namespace g4::cli {

void AddModelOptions(CLI::App* sub, ModelFlags* flags) {
  sub->add_option("--model", flags->path,
                  "Checkpoint directory (config.json, safetensors, tokenizer.json), .gguf file, "
                  "or ORG/NAME[:FILE.gguf] in the Hugging Face cache (see g4 pull)")
      ->required();
  sub->add_option("--revision", flags->revision,
                  "Branch, tag or commit of --model ORG/NAME in the cache (default main)");
  sub->add_option("--backend", flags->backend, "cpu (SIMD, threaded), ref (scalar oracle) or cuda");
  sub->add_option("--threads", flags->threads, "Threads for the cpu backend (0: all cores)");
  sub->add_option("--head", flags->head,
                  "LM head: auto (for W4A16 checkpoints on the cpu: q8, or with --matvec q8 "
                  "q6_k where the hidden size is whole blocks of 256, else q8_0; otherwise as "
                  "stored), bf16 (as stored), q8, q4, q8_0, q6_k (GGUF blocks; with --matvec q8)");
  sub->add_option("--matvec", flags->matvec,
                  "GGUF matmuls: exact (f32 activations) or q8 (int8 activations and integer dot "
                  "products against Q4_0 / Q5_0 / Q8_0 / Q4_K / Q6_K, as llama.cpp; on AVX-512 "
                  "VNNI all but Q4_K are repacked at load; cpu and ref)");
  sub->add_option("--kv-dtype", flags->kv_dtype,
                  "KV cache storage: f32 (default), bf16 (half the bytes per token) or q8 "
                  "(int8 blocks of 32 with an f32 scale: 28% of f32's bytes), read directly "
                  "by the attention; cpu and ref; see docs/speed.md for their accuracy");
}

StatusOr<std::unique_ptr<Backend>> OpenBackend(const std::string& name, int threads,
                                               const std::string& matvec,
                                               const std::string& kv_dtype) {
  G4_ASSIGN_OR_RETURN(const BackendKind kind, ParseBackendKind(name));
  G4_ASSIGN_OR_RETURN(const MatVec mv, ParseMatVec(matvec));
  auto kv = ParseKvDtype(kv_dtype);
  if (!kv.ok()) return kv.status().WithContext("--kv-dtype");
  G4_ASSIGN_OR_RETURN(std::unique_ptr<Backend> backend, Backend::Create(kind, threads, mv, *kv));
  LogInfo("device policy: " + backend->PolicyString());
  return backend;
}

StatusOr<std::unique_ptr<Backend>> OpenBackend(const ModelFlags& flags) {
  return OpenBackend(flags.backend, flags.threads, flags.matvec, flags.kv_dtype);
}

StatusOr<LoadOptions> LoadOptionsFor(const ModelFlags& flags, const Backend& backend) {
  LoadOptions options;
  G4_ASSIGN_OR_RETURN(options.head, ParseHeadMode(flags.head));
  options.device = backend.memory().is_device();
  options.int8_matvec = backend.matvec() == MatVec::kQ8;
  options.pack_weight = backend.weight_packer();
  return options;
}

StatusOr<std::string> ResolveModelFlag(const ModelFlags& flags) {
  G4_ASSIGN_OR_RETURN(std::string path, ResolveModelPath(flags.path, flags.revision));
  if (path != flags.path) LogInfo("model " + flags.path + ": " + path);
  return path;
}

StatusOr<LoadedModel> LoadModelLogged(const ModelFlags& flags, const Backend& backend) {
  G4_ASSIGN_OR_RETURN(const LoadOptions options, LoadOptionsFor(flags, backend));
  LoadedModel m;
  G4_ASSIGN_OR_RETURN(const std::string path, ResolveModelFlag(flags));
  G4_ASSIGN_OR_RETURN(m.checkpoint, Checkpoint::Open(path));
  G4_ASSIGN_OR_RETURN(m.model, LoadCausalLM(m.checkpoint, options));
  LogInfo("model architecture=" + m.model->info().architecture +
          " weights=" + WeightDTypes(*m.model) + " head=" + StorageName(m.model->lm_head()));
  return m;
}

StatusOr<TextSession> OpenTextSession(const ModelFlags& flags) {
  TextSession s;
  G4_ASSIGN_OR_RETURN(s.backend, OpenBackend(flags));
  G4_ASSIGN_OR_RETURN(s.loaded, LoadModelLogged(flags, *s.backend));
  auto tok = LoadModelTokenizer(*s.loaded.checkpoint);
  if (!tok.ok()) return tok.status().WithContext("tokenizer of " + flags.path);
  s.tokenizer = std::move(*tok);
  return s;
}

int LogFailure(const Status& status) {
  LogError(status.ToString());
  return 1;
}

}  // namespace g4::cli
