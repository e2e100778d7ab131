// `g4 pull ORG/NAME [--revision R] [--include GLOB ...]`: downloads a model repo from the
// Hugging Face Hub (HF_ENDPOINT, HF_TOKEN) into the Hugging Face cache (hub/pull.h), where
// `--model ORG/NAME` and huggingface_hub both find it. Prints the snapshot folder on stdout.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "core/log.h"
#include "hub/progress.h"
#include "hub/pull.h"

namespace g4::cli {

namespace {

struct PullArgs {
  std::string repo_id;
  std::string revision = "main";
  std::vector<std::string> include;
  bool quiet = false;
};

int RunPull(const PullArgs& a) {
  hub::PullOptions o = hub::PullOptionsFromEnv();
  o.repo_id = a.repo_id;
  o.revision = a.revision;
  o.include = a.include;
  o.progress = !a.quiet;
  auto r = hub::Pull(o);
  if (!r.ok()) {
    LogError(r.status().ToString());
    return 1;
  }
  LogInfo("pulled " + a.repo_id + " " + a.revision + ": " + std::to_string(r->downloaded) +
          " files downloaded (" + hub::FormatBytes(r->bytes) + "), " +
          std::to_string(r->already_cached) + " already in the cache");
  std::printf("%s\n", r->snapshot_dir.c_str());
  return 0;
}

}  // namespace

RunFn AddPullCommand(CLI::App& app) {
  auto a = std::make_shared<PullArgs>();
  CLI::App* sub = app.add_subcommand(
      "pull", "Download a model repo from the Hugging Face Hub into the Hugging Face cache "
              "(HF_HUB_CACHE; HF_ENDPOINT, HF_TOKEN), then use it as --model ORG/NAME");
  sub->add_option("repo", a->repo_id, "Repo id ORG/NAME")->required();
  sub->add_option("--revision", a->revision, "Branch, tag or commit (default main)");
  sub->add_option("--include", a->include,
                  "Only files matching these globs (e.g. '*.json' '*Q4_0.gguf'); default all");
  sub->add_flag("--quiet", a->quiet, "No progress lines");
  return [a] { return RunPull(*a); };
}

}  // namespace g4::cli
