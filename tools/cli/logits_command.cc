// `g4 logits`: one forward pass over given token ids; writes raw little-endian float32
// [T, vocab] and prints T, vocab and the argmax per position. The first stderr line is the
// device policy.
#include <chrono>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>

#include "backend_setup.h"
#include "commands.h"
#include "core/log.h"
#include "core/process_stats.h"
#include "sampling_flags.h"

namespace g4::cli {
namespace {

struct LogitsOptions {
  ModelFlags model;
  std::string ids;
  std::string out;
};

double MiB(uint64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

int Run(const LogitsOptions& o) {
  using Clock = std::chrono::steady_clock;
  auto fail = [](const Status& s) {
    LogError(s.ToString());
    return 1;
  };
  auto ids = ParseIdList(o.ids, "--ids");
  if (!ids.ok()) return fail(ids.status());
  auto backend = OpenBackend(o.model);  // first: its policy line, a device error
  if (!backend.ok()) return fail(backend.status());

  const auto t0 = Clock::now();
  auto loaded = LoadModelLogged(o.model, **backend);
  if (!loaded.ok()) return fail(loaded.status());
  const CausalLM& model = *loaded->model;
  const double load_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  LogInfo("loaded " + o.model.path + " in " + std::to_string(static_cast<int>(load_ms)) +
          " ms; resident " + std::to_string(static_cast<int>(MiB(ResidentBytes()))) + " MiB of " +
          std::to_string(static_cast<int>(MiB(model.mapped_bytes()))) + " MiB mapped");

  const auto t1 = Clock::now();
  auto logits = model.Forward(**backend, *ids);
  if (!logits.ok()) return fail(logits.status());
  const double fwd_ms = std::chrono::duration<double, std::milli>(Clock::now() - t1).count();
  LogInfo("forward of " + std::to_string(ids->size()) + " tokens in " +
          std::to_string(fwd_ms) + " ms; peak resident " +
          std::to_string(static_cast<int>(MiB(PeakResidentBytes()))) + " MiB");

  const int64_t V = model.info().vocab_size, T = static_cast<int64_t>(ids->size());
  if (!o.out.empty()) {
    std::FILE* f = std::fopen(o.out.c_str(), "wb");
    if (!f || std::fwrite(logits->data(), sizeof(float), logits->size(), f) != logits->size()) {
      if (f) std::fclose(f);
      return fail(IoError("cannot write " + o.out));
    }
    if (std::fclose(f) != 0) return fail(IoError("cannot write " + o.out));
  }
  std::printf("T=%lld vocab=%lld\nargmax:", static_cast<long long>(T), static_cast<long long>(V));
  for (int64_t t = 0; t < T; ++t) {
    const float* row = logits->data() + t * V;
    int64_t best = 0;
    for (int64_t i = 1; i < V; ++i) if (row[i] > row[best]) best = i;
    std::printf("%s%lld", t ? "," : " ", static_cast<long long>(best));
  }
  std::printf("\n");
  return 0;
}

}  // namespace

RunFn AddLogitsCommand(CLI::App& app) {
  auto o = std::make_shared<LogitsOptions>();
  CLI::App* sub = app.add_subcommand("logits", "Run one forward pass and write the logits");
  AddModelOptions(sub, &o->model);
  sub->add_option("--ids", o->ids, "Comma-separated token ids, e.g. 2,17,33")->required();
  sub->add_option("--out", o->out, "Write raw little-endian float32 [T, vocab] here");
  return [o] { return Run(*o); };
}

}  // namespace g4::cli
