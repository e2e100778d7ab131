// `g4 generate`: token-by-token generation from token ids; prints the new ids as a JSON array
// on its last stdout line, and prompt/prefill/decode/end-to-end speeds and the degeneracy
// verdict on stderr.
#include <cstdio>
#include <memory>

#include "backend_setup.h"
#include "commands.h"
#include "core/log.h"
#include "profile_report.h"
#include "runtime/generator.h"
#include "sampling_flags.h"

namespace g4::cli {
namespace {

struct GenerateArgs {
  ModelFlags model;
  std::string ids;
  bool profile = false;
  GenerationFlags gen;
};

int Run(GenerateArgs& a) {
  auto fail = [](const Status& s) {
    LogError(s.ToString());
    return 1;
  };
  auto ids = ParseIdList(a.ids, "--ids");
  if (!ids.ok()) return fail(ids.status());
  auto backend = OpenBackend(a.model);  // first: its policy line, a device error
  if (!backend.ok()) return fail(backend.status());
  auto loaded = LoadModelLogged(a.model, **backend);
  if (!loaded.ok()) return fail(loaded.status());
  const CausalLM& model = *loaded->model;
  GenerationOptions options = a.gen.ToOptions(model.info());
  GenerationCallbacks cb;
  cb.on_info = [](const std::string& line) { LogInfo(line); };
  OpProfiler profiler;
  if (a.profile) AttachDecodeProfiler(**backend, profiler, model.info().vocab_size, cb);
  auto result = Generate(model, **backend, *ids, options, cb);
  if (!result.ok()) return fail(result.status());
  LogGenerationSummary(*result);
  if (a.profile) std::fprintf(stderr, "%s", FormatGenerationProfile(profiler, result->stats).c_str());
  std::string json = "[";
  for (size_t i = 0; i < result->tokens.size(); ++i) {
    json += (i ? "," : "") + std::to_string(result->tokens[i]);
  }
  std::printf("%s]\n", json.c_str());
  return 0;
}

}  // namespace

RunFn AddGenerateCommand(CLI::App& app) {
  auto a = std::make_shared<GenerateArgs>();
  CLI::App* sub = app.add_subcommand("generate", "Generate token ids from token ids");
  AddModelOptions(sub, &a->model);
  sub->add_option("--ids", a->ids, "Comma-separated prompt token ids, e.g. 2,17,33")->required();
  sub->add_flag("--profile", a->profile, "Print where decode time goes (ms/token by category)");
  a->gen.Register(sub);
  return [a] { return Run(*a); };
}

}  // namespace g4::cli
