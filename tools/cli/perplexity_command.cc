// `g4 perplexity`: the perplexity of a model on a text file, with llama-perplexity's protocol
// (runtime/perplexity.h), so the number compares with llama.cpp's on the same file and context.
// Prints the running value after each chunk ("[1]12.3456,[2]..."), then the final estimate;
// --json writes {"ppl", "chunks", "ctx", "tokens_scored", "nll_sum", "running"} (and "baseline"
// with --baseline-matvec).
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "backend_setup.h"
#include "commands.h"
#include "core/log.h"
#include "runtime/perplexity.h"

namespace g4::cli {
namespace {

struct PerplexityArgs {
  ModelFlags model;
  std::string file, json_path, baseline_matvec, baseline_kv_dtype;
  PerplexityOptions options;
};

int Run(PerplexityArgs& a) {
  auto session = OpenTextSession(a.model);
  if (!session.ok()) return LogFailure(session.status());
  std::ifstream in(a.file, std::ios::binary);
  if (!in) return LogFailure(NotFound("--file " + a.file + ": cannot be read"));
  std::stringstream buf;
  buf << in.rdbuf();
  std::string text = buf.str();
  if (!text.empty() && text.back() == '\n') text.pop_back();  // as llama-perplexity reads -f
  // As llama-perplexity tokenizes: BOS when the model adds one, special tokens as plain text.
  const Tokenizer& tok = *session->tokenizer.tokenizer;
  const bool add_bos = tok.special_ids().add_bos_token && tok.special_ids().bos >= 0;
  const std::vector<int32_t> tokens =
      tok.Encode(text, EncodeOptions{/*parse_special=*/false, add_bos});
  a.options.bos = add_bos ? tok.special_ids().bos : -1;
  std::unique_ptr<Backend> baseline;
  // The baseline differs from this run in --matvec, --kv-dtype or both.
  if (!a.baseline_matvec.empty() || !a.baseline_kv_dtype.empty()) {
    auto b = OpenBackend(a.model.backend, a.model.threads,
                         a.baseline_matvec.empty() ? a.model.matvec : a.baseline_matvec,
                         a.baseline_kv_dtype.empty() ? a.model.kv_dtype : a.baseline_kv_dtype);
    if (!b.ok()) return LogFailure(b.status().WithContext("the baseline"));
    baseline = std::move(*b);
    a.options.baseline = baseline.get();
  }
  LogInfo("perplexity: " + std::to_string(tokens.size()) + " tokens; chunks of " +
          std::to_string(a.options.ctx) + ", the second half of each scored");
  auto r = Perplexity(session->model(), *session->backend, tokens, a.options,
                      [](int done, int, double ppl) {
    std::printf("%s[%d]%.4f", done > 1 ? "," : "", done, ppl);
    std::fflush(stdout);
  });
  if (!r.ok()) return LogFailure(r.status());
  std::printf("\nFinal estimate: PPL = %.4f (%d chunks of %d, %lld tokens scored)\n", r->ppl(),
              r->chunks, a.options.ctx, static_cast<long long>(r->scored));
  const double n = static_cast<double>(std::max<int64_t>(1, r->scored));
  if (baseline) {
    std::printf("Baseline (--matvec %s --kv-dtype %s): PPL = %.4f; this run / baseline = %.5f; "
                "mean KL = %.6f nats (max %.6f); same top token %.2f%%\n",
                MatVecName(baseline->matvec()), KvDtypeName(baseline->kv_dtype()),
                r->baseline_ppl(), r->ppl() / r->baseline_ppl(),
                r->kl_sum / n, r->kl_max, 100.0 * static_cast<double>(r->top1_same) / n);
  }
  if (!a.json_path.empty()) {
    nlohmann::ordered_json j;
    j["ppl"] = r->ppl();
    j["chunks"] = r->chunks;
    j["ctx"] = a.options.ctx;
    j["tokens"] = tokens.size();
    j["tokens_scored"] = r->scored;
    j["nll_sum"] = r->nll_sum;
    j["running"] = r->running_ppl;
    if (baseline) {
      j["baseline"] = {{"matvec", MatVecName(baseline->matvec())},
                       {"kv_dtype", KvDtypeName(baseline->kv_dtype())},
                       {"ppl", r->baseline_ppl()},
                       {"kl_mean", r->kl_sum / n},
                       {"kl_max", r->kl_max},
                       {"top1_same", static_cast<double>(r->top1_same) / n}};
    }
    std::ofstream f(a.json_path);
    f << j.dump(2) << "\n";
    if (!f) return LogFailure(IoError("cannot write " + a.json_path));
  }
  return 0;
}

}  // namespace

RunFn AddPerplexityCommand(CLI::App& app) {
  auto a = std::make_shared<PerplexityArgs>();
  CLI::App* sub = app.add_subcommand(
      "perplexity", "Perplexity of a text file (llama-perplexity's protocol: chunks of --ctx, "
                    "the second half of each scored)");
  AddModelOptions(sub, &a->model);
  sub->add_option("--file", a->file, "The text (UTF-8)")->required();
  sub->add_option("--ctx", a->options.ctx, "Tokens per chunk (512)");
  sub->add_option("--chunks", a->options.max_chunks, "Most chunks to run (0: all)");
  sub->add_option("--batch", a->options.batch, "Tokens per forward pass inside a chunk (128)");
  sub->add_option("--json", a->json_path, "Also write the result as JSON here");
  sub->add_option("--baseline-matvec", a->baseline_matvec,
                  "Also run every chunk with this --matvec and report its perplexity, the KL "
                  "divergence from it and top-token agreement (e.g. --matvec q8 "
                  "--baseline-matvec exact --batch 1)");
  sub->add_option("--baseline-kv-dtype", a->baseline_kv_dtype,
                  "Also run every chunk with this --kv-dtype, compared as --baseline-matvec is "
                  "(e.g. --kv-dtype bf16 --baseline-kv-dtype f32)");
  return [a] { return Run(*a); };
}

}  // namespace g4::cli
