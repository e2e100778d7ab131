// `g4 bench`: decode and prefill speed of a checkpoint on this machine, judged against the
// machine itself. For each prompt length (--contexts) it prefills a fresh KV cache with
// deterministic pseudo-random ids, then runs --decode greedy decode steps, --repeat times, and
// reports medians: prefill tok/s, decode tok/s (decode forward passes only: the gauge), end-to-end
// tok/s (generated tokens over prefill + decode + sampling), and decode as a percentage of the
// roofline = memory-read bandwidth (measured in this process, before and after the runs, over a
// buffer larger than the caches) / weight bytes read per decode token (from the model's bound
// tensors: packed bytes + scales for quantized ones, the LM head as bound, one row per embedding
// table). Prefill is also given as GFLOP/s and percent of the measured f32 FMA peak. Prints a
// table (stdout) and optionally JSON (--json); the device policy and the git commit head both.
// --profile adds the per-category decode breakdown (profile_report.h); --head-error measures the
// logits error of the quantized LM head copies against the bf16 head. --batch N decodes N
// sequences together (each prefilled with the prompt, then one batched forward per step):
// decode tok/s counts every sequence's tokens, and %roofline compares the step rate with the
// rate at which the weights can be read once per step.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <sys/resource.h>

#include <nlohmann/json.hpp>

#include "backend_setup.h"
#include "commands.h"
#include "core/log.h"
#include "core/process_stats.h"
#include "model/causal_lm.h"
#include "model/registry.h"
#include "ops/probe.h"
#include "ops/profiler.h"
#include "profile_report.h"
#include "runtime/kv_cache/kv_cache.h"
#include "runtime/kv_cache/kv_fill.h"
#include "runtime/prefill.h"

namespace g4::cli {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::ordered_json;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

struct BenchArgs {
  ModelFlags model;
  std::string contexts = "41,521,2057", json_path;
  int decode = 64, repeat = 1, prefill_chunk = kDefaultPrefillChunk, batch = 1;
  int kv_fill = 0;  // > 0: only each context's last kv_fill tokens run; the rest is filled
  bool profile = false, head_error = false, graphs = true;
  double bandwidth_mib = 1024;
};

// One prefill + decode run of `batch` sequences.
struct RunResult {
  double prefill_s = 0, decode_s = 0, sampling_s = 0;
  int64_t steps = 0;           // decode forwards, each of `batch` tokens
  std::vector<double> step_s;  // each decode forward
  double decode_cpu_s = 0;     // process CPU time (user + sys) over the decode steps
  StepGraphs::Stats graphs;    // how the decode steps ran (recorded graphs or op by op)
  std::string graphs_refused;
};

// User + system CPU time of the whole process (every thread), in seconds.
double ProcessCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

// RssAnon and RssFile of /proc/self/status in bytes ({0, 0} if unknown): the resident set split
// into anonymous memory (load-time copies, caches, scratch) and file pages (mapped weights).
std::pair<uint64_t, uint64_t> ResidentSplit() {
  std::ifstream f("/proc/self/status");
  std::string key;
  uint64_t anon = 0, file = 0, kb = 0;
  while (f >> key) {
    if (key == "RssAnon:" && f >> kb) anon = kb * 1024;
    if (key == "RssFile:" && f >> kb) file = kb * 1024;
  }
  return {anon, file};
}

// The 1-minute load average (/proc/loadavg), or -1: how busy the machine was with other work.
double LoadAverage() {
  std::ifstream f("/proc/loadavg");
  double v = -1;
  f >> v;
  return f ? v : -1;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int32_t Argmax(const std::vector<float>& logits) {
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

// `git describe --always --dirty` of the tree the binary was built in (found from the binary's
// own path), or "unknown".
std::string GitCommit() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "unknown";
  const std::string cmd = "git -C '" + exe.parent_path().string() +
                          "' describe --always --dirty --abbrev=12 2>/dev/null";
  std::FILE* p = popen(cmd.c_str(), "r");
  if (!p) return "unknown";
  char buf[128] = {};
  const bool got = std::fgets(buf, sizeof buf, p) != nullptr;
  pclose(p);
  std::string s = got ? buf : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s.empty() ? "unknown" : s;
}

StatusOr<std::vector<int>> ParseContexts(const std::string& text) {
  std::vector<int> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v <= 0 || v > (1 << 24)) {
      return InvalidArgument("--contexts: '" + item + "' is not a positive token count");
    }
    out.push_back(static_cast<int>(v));
  }
  if (out.empty()) return InvalidArgument("--contexts: no prompt lengths given");
  return out;
}

// Deterministic prompt ids (LCG) in [4, vocab): never a special id at the low end.
std::vector<int32_t> PromptIds(const ModelInfo& c, int n, uint32_t seed) {
  const int vocab = c.input_vocab;
  std::vector<int32_t> ids(static_cast<size_t>(n));
  uint32_t s = seed * 2654435761u + 12345u;
  for (int32_t& id : ids) {
    s = s * 1664525u + 1013904223u;
    id = 4 + static_cast<int32_t>((s >> 8) % static_cast<uint32_t>(std::max(1, vocab - 4)));
  }
  if (!ids.empty()) ids[0] = c.bos_id;
  return ids;
}

// Multiply-adds x 2 per prompt token in the linears (not the head), and attention flops for
// prompt positions [from, n) (QK and PV, 2 * 2 * heads * head_dim per visible key), per token.
double PrefillFlopsPerToken(const CausalLM& m, int from, int n, int chunk) {
  const ModelInfo& c = m.info();
  const double linear = LinearFlopsPerToken(m);
  const int T = n - from;
  double attn = 0;
  for (const KvLayout& l : c.layers) {
    double visible = 0;  // mean over the prompt's positions
    for (int t = from; t < n; ++t) visible += l.sliding() ? std::min(t + 1, l.window) : t + 1;
    attn += 4.0 * l.n_heads * l.head_dim * visible / T;
  }
  const double chunks = std::ceil(static_cast<double>(T) / std::max(1, chunk));
  const double head = 2.0 * c.vocab_size * c.hidden_size * chunks / T;  // last position per chunk
  return linear + attn + head;
}

// Bytes of K and V one decode step reads at `context` cached positions (KV-shared layers read
// their donors'), stored as `dtype`.
double KvBytesPerToken(const ModelInfo& c, int context, KvDtype dtype) {
  double b = 0;
  for (const KvLayout& l : c.layers) {
    const int visible = l.sliding() ? std::min(context, l.window) : context;
    b += 2.0 * visible *
         static_cast<double>(KvRowBytes(dtype, static_cast<int64_t>(l.n_kv_heads) * l.head_dim));
  }
  return b;
}

// Prefills `batch` sequences with `prompt` (one after another; after `filled` positions of
// synthetic K/V, untimed, when filled > 0), then runs `decode` greedy steps with all of them in
// each forward, as the server's continuous batching does.
// With `graphs` (and a backend that records them) the decode steps are recorded and replayed
// (model/step_graphs.h); a profiler times ops one by one, so it runs them op by op.
StatusOr<RunResult> RunOnce(const CausalLM& m, Backend& be, const std::vector<int32_t>& prompt,
                            int decode, int chunk, int batch, OpProfiler* profiler, bool graphs,
                            OpProfiler* prefill_profiler = nullptr, int filled = 0) {
  const ModelInfo& c = m.info();
  const int context =
      std::min<int>(filled + static_cast<int>(prompt.size()) + decode + 1, c.max_context);
  const size_t B = static_cast<size_t>(batch);
  std::vector<std::unique_ptr<SequenceKvCache>> caches(B);
  std::vector<std::vector<float>> logits(B);
  RunResult r;
  for (size_t b = 0; b < B; ++b) {
    G4_ASSIGN_OR_RETURN(caches[b],
                        SequenceKvCache::Create(c.layers, context, be.memory(), be.kv_dtype()));
    G4_RETURN_IF_ERROR(FillKvCache(c, be, *caches[b], filled, static_cast<uint32_t>(b + 1)));
  }
  if (prefill_profiler) {
    be.SetProfiler(prefill_profiler);
    prefill_profiler->set_enabled(true);
  }
  const auto t0 = Clock::now();
  for (size_t b = 0; b < B; ++b) {
    G4_ASSIGN_OR_RETURN(logits[b], Prefill(m, be, *caches[b], prompt, chunk));
  }
  r.prefill_s = Seconds(t0, Clock::now());
  if (prefill_profiler) {
    prefill_profiler->set_enabled(false);
    be.SetProfiler(profiler);
  }
  if (profiler) profiler->set_enabled(true);
  const double cpu0 = ProcessCpuSeconds();
  std::vector<int32_t> next(B);
  std::vector<CausalLM::BatchItem> items(B);
  StepGraphs step_graphs;
  StepGraphs* use_graphs = graphs && !profiler ? &step_graphs : nullptr;
  for (int k = 0; k < decode && caches[0]->size() < caches[0]->max_context(); ++k) {
    const auto ts = Clock::now();
    for (size_t b = 0; b < B; ++b) {
      next[b] = Argmax(logits[b]);
      items[b] = {std::span<const int32_t>(&next[b], 1), caches[b]->size(), caches[b].get(), true};
    }
    const auto tf = Clock::now();
    r.sampling_s += Seconds(ts, tf);
    G4_ASSIGN_OR_RETURN(logits, m.ForwardBatch(be, items, nullptr, use_graphs));
    const double step = Seconds(tf, Clock::now());
    r.decode_s += step;
    r.step_s.push_back(step);
    ++r.steps;
  }
  r.decode_cpu_s = ProcessCpuSeconds() - cpu0;
  const auto ts = Clock::now();
  for (const std::vector<float>& l : logits) (void)Argmax(l);  // the tokens after the last step
  r.sampling_s += Seconds(ts, Clock::now());
  if (profiler) profiler->set_enabled(false);
  r.graphs = step_graphs.stats();
  r.graphs_refused = step_graphs.refused();
  return r;
}

// Logits of `prompt` (all positions) for the model at `dir` loaded with head `mode`.
StatusOr<std::vector<float>> HeadLogits(const std::string& dir, HeadMode mode, Backend& be,
                                        const std::vector<int32_t>& prompt) {
  LoadOptions options;
  options.head = mode;
  options.device = be.memory().is_device();
  G4_ASSIGN_OR_RETURN(std::unique_ptr<CausalLM> m, LoadCausalLM(dir, options));
  return m->Forward(be, prompt);
}

// Error of the q8, q4, q8_0 and q6_k head copies against the bf16 head on `prompt`: max |diff| /
// max |logit|, rms diff / rms logit, top-1 agreement, mean KL(bf16 || quantized) in nats.
StatusOr<ordered_json> HeadError(const std::string& dir, Backend& be, const ModelInfo& c,
                                 const std::vector<int32_t>& prompt) {
  G4_ASSIGN_OR_RETURN(const std::vector<float> base, HeadLogits(dir, HeadMode::kAsStored, be, prompt));
  const int64_t V = c.vocab_size, T = static_cast<int64_t>(prompt.size());
  ordered_json out;
  for (HeadMode mode : {HeadMode::kQ8, HeadMode::kQ4, HeadMode::kQ8_0, HeadMode::kQ6_K}) {
    if (mode == HeadMode::kQ6_K && c.hidden_size % 256 != 0) continue;  // 256-wide blocks
    G4_ASSIGN_OR_RETURN(const std::vector<float> q, HeadLogits(dir, mode, be, prompt));
    double max_ref = 0, max_diff = 0, ss_ref = 0, ss_diff = 0, kl = 0;
    int64_t agree = 0;
    for (int64_t t = 0; t < T; ++t) {
      const float* a = base.data() + t * V;
      const float* b = q.data() + t * V;
      double ma = a[0], mb = b[0];
      int64_t ia = 0, ib = 0;
      for (int64_t i = 0; i < V; ++i) {
        max_ref = std::max(max_ref, std::fabs(double{a[i]}));
        max_diff = std::max(max_diff, std::fabs(double{a[i]} - b[i]));
        ss_ref += double{a[i]} * a[i];
        ss_diff += (double{a[i]} - b[i]) * (double{a[i]} - b[i]);
        if (a[i] > ma) { ma = a[i]; ia = i; }
        if (b[i] > mb) { mb = b[i]; ib = i; }
      }
      agree += ia == ib;
      double za = 0, zb = 0;
      for (int64_t i = 0; i < V; ++i) {
        za += std::exp(a[i] - ma);
        zb += std::exp(b[i] - mb);
      }
      for (int64_t i = 0; i < V; ++i) {
        const double pa = std::exp(a[i] - ma) / za;
        const double la = a[i] - ma - std::log(za), lb = b[i] - mb - std::log(zb);
        kl += pa * (la - lb);
      }
    }
    ordered_json e;
    e["max_abs_diff_over_max_abs_logit"] = max_diff / std::max(1e-30, max_ref);
    e["rms_diff_over_rms_logit"] = std::sqrt(ss_diff / std::max(1e-30, ss_ref));
    e["top1_agreement"] = static_cast<double>(agree) / T;
    e["mean_kl_nats"] = kl / T;
    out[HeadModeName(mode)] = e;
  }
  return out;
}

std::string Gb(double bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3f GB", bytes / 1e9);
  return b;
}

int Run(const BenchArgs& a) {
  auto fail = [](const Status& s) {
    LogError(s.ToString());
    return 1;
  };
  auto contexts = ParseContexts(a.contexts);
  if (!contexts.ok()) return fail(contexts.status());
  if (a.decode < 0 || a.repeat < 1 || a.batch < 1 || a.batch > 256 || a.kv_fill < 0) {
    return fail(InvalidArgument(
        "--decode must be >= 0, --repeat >= 1, --batch in [1, 256], --kv-fill >= 0"));
  }
  auto backend = OpenBackend(a.model);  // first: its policy line, a device error
  if (!backend.ok()) return fail(backend.status());
  Backend& be = **backend;

  const auto t_load = Clock::now();
  auto loaded = LoadModelLogged(a.model, be);
  if (!loaded.ok()) return fail(loaded.status());
  const CausalLM& model = *loaded->model;
  const double load_s = Seconds(t_load, Clock::now());
  const uint64_t resident_after_load = ResidentBytes();  // with cuda: includes its host context
  const ModelInfo& c = model.info();

  const std::map<std::string, uint64_t> by_storage = DecodeBytesByStorage(model);
  std::string weights;
  for (const auto& [name, bytes] : by_storage) {
    if (name.find("(lm head)") == std::string::npos) weights += (weights.empty() ? "" : "+") + name;
  }
  const std::string model_policy =
      "architecture=" + c.architecture + " weights=" + weights + " head=" +
      StorageName(model.lm_head());
  const std::string policy = be.PolicyString() + " " + model_policy;  // for the table and JSON
  const std::string commit = GitCommit();
  LogInfo("commit " + commit + "; loaded " + a.model.path + " in " + std::to_string(load_s) +
          " s; resident " + Gb(static_cast<double>(resident_after_load)) + " of " +
          Gb(static_cast<double>(model.mapped_bytes())) + " mapped");

  const double weight_bytes = static_cast<double>(DecodeWeightBytes(model));
  const size_t bw_bytes = static_cast<size_t>(a.bandwidth_mib * 1048576.0);
  std::vector<double> bw_samples;
  auto measure_bw = [&] {
    for (int i = 0; i < 3; ++i) bw_samples.push_back(MeasureReadBandwidth(be, bw_bytes, 3));
  };
  measure_bw();
  // FMA peak: the better of all threads measured together and one thread x threads (other
  // processes competing for the cores make the first an underestimate).
  const double fma_all = MeasureFmaPeak(be, 0.3);
  const double fma_one = MeasureFmaPeakOneThread(0.3);
  const double fma_peak = std::max(fma_all, fma_one * be.pool().size());
  const double load_before = LoadAverage();
  LogInfo("read bandwidth " + std::to_string(Median(bw_samples) / 1e9) + " GB/s (before runs); f32 FMA peak " +
          std::to_string(fma_peak / 1e9) + " GFLOP/s; weights read per decode token " + Gb(weight_bytes));

  OpProfiler profiler, prefill_profiler;  // decode steps; prompt tokens
  profiler.set_lm_head_rows(c.vocab_size);
  profiler.set_enabled(false);
  prefill_profiler.set_lm_head_rows(c.vocab_size);
  prefill_profiler.set_enabled(false);
  if (a.profile) be.SetProfiler(&profiler);

  // Warm-up (untimed): faults in every weight page and sizes the kernels' scratch buffers.
  {
    auto warm = RunOnce(model, be, PromptIds(c, 8, 1), 3, a.prefill_chunk, a.batch, nullptr,
                        a.graphs);
    if (!warm.ok()) return fail(warm.status());
  }

  ordered_json runs = ordered_json::array();
  struct Row {
    int context;
    double prefill, decode, decode_median, e2e, prefill_gflops, kv_bytes, cpu_util;
  };
  std::vector<Row> rows;
  std::string profiles;
  StepGraphs::Stats graph_stats;  // over every timed run
  std::string graphs_refused;
  for (int ctx : *contexts) {
    if (ctx + a.decode + 1 > c.max_context) {
      return fail(InvalidArgument("--contexts " + std::to_string(ctx) + " + --decode does not fit "
                                  "max_position_embeddings"));
    }
    // --kv-fill: positions [0, filled) hold synthetic K/V; only the rest of the prompt runs.
    const int filled = a.kv_fill > 0 ? std::max(0, ctx - a.kv_fill) : 0;
    const int ran = ctx - filled;  // prompt tokens that run (all of them without --kv-fill)
    std::vector<int32_t> prompt = PromptIds(c, ctx, static_cast<uint32_t>(ctx));
    prompt.erase(prompt.begin(), prompt.begin() + filled);
    profiler.Reset();
    prefill_profiler.Reset();
    std::vector<double> prefill, decode, e2e, steps;
    RunResult sum;
    for (int r = 0; r < a.repeat; ++r) {
      auto res = RunOnce(model, be, prompt, a.decode, a.prefill_chunk, a.batch,
                         a.profile ? &profiler : nullptr, a.graphs,
                         a.profile ? &prefill_profiler : nullptr, filled);
      if (!res.ok()) return fail(res.status());
      const double B = a.batch;  // tokens per decode step
      prefill.push_back(B * ran / res->prefill_s);
      decode.push_back(res->steps > 0 ? B * res->steps / res->decode_s : 0.0);
      e2e.push_back(B * (res->steps + 1) / (res->prefill_s + res->decode_s + res->sampling_s));
      sum.prefill_s += res->prefill_s;
      sum.decode_s += res->decode_s;
      sum.sampling_s += res->sampling_s;
      sum.steps += res->steps;
      sum.decode_cpu_s += res->decode_cpu_s;
      graph_stats.recorded += res->graphs.recorded;
      graph_stats.replayed += res->graphs.replayed;
      graph_stats.op_by_op += res->graphs.op_by_op;
      graph_stats.ops_per_step = std::max(graph_stats.ops_per_step, res->graphs.ops_per_step);
      if (!res->graphs_refused.empty()) graphs_refused = res->graphs_refused;
      steps.insert(steps.end(), res->step_s.begin(), res->step_s.end());
    }
    const double flops = PrefillFlopsPerToken(model, filled, ctx, a.prefill_chunk);
    const double median_step = Median(steps);
    Row row{ctx,
            Median(prefill),
            Median(decode),
            median_step > 0 ? a.batch / median_step : 0.0,
            Median(e2e),
            Median(prefill) * flops / 1e9,
            KvBytesPerToken(c, ctx, be.kv_dtype()),
            sum.decode_s > 0 ? sum.decode_cpu_s / (sum.decode_s * be.pool().size()) : 0.0};
    rows.push_back(row);
    ordered_json j;
    j["context"] = ctx;
    j["kv_filled"] = filled;
    j["prefill_tok_s"] = row.prefill;
    j["decode_tok_s"] = row.decode;
    j["decode_tok_s_median_step"] = row.decode_median;
    j["decode_cpu_utilization"] = row.cpu_util;
    j["end_to_end_tok_s"] = row.e2e;
    j["prefill_gflop_per_token"] = flops / 1e9;
    j["prefill_gflops"] = row.prefill_gflops;
    j["kv_bytes_read_per_decode_token"] = row.kv_bytes;
    j["samples"] = {{"prefill_tok_s", prefill}, {"decode_tok_s", decode}, {"end_to_end_tok_s", e2e}};
    if (a.profile) {
      const DecodeProfile p{&profiler, sum.steps, sum.decode_s, sum.sampling_s};
      j["profile"] = ProfileJson(p);
      profiles += "context " + std::to_string(ctx) + ": " + FormatProfile(p);
      // The prompt's forwards per prompt token (sampling: none; the whole prefill is "forward").
      const DecodeProfile pp{&prefill_profiler, int64_t{a.batch} * ran * a.repeat, sum.prefill_s,
                             0.0, "prefill", "prompt tokens"};
      j["prefill_profile"] = ProfileJson(pp);
      profiles += "context " + std::to_string(ctx) + " prefill, per prompt token: " +
                  FormatProfile(pp);
    }
    runs.push_back(j);
  }
  be.SetProfiler(nullptr);
  // What the model holds (mapped weight pages touched, load-time copies, KV caches and scratch)
  // after every run, before the second bandwidth probe allocates its buffer again.
  const uint64_t resident_after_runs = ResidentBytes();
  const auto [resident_anon, resident_file] = ResidentSplit();
  measure_bw();
  const double bw = Median(bw_samples);
  const double roofline = bw / weight_bytes;

  // The table.
  std::printf("g4 bench  %s\n", a.model.path.c_str());
  std::printf("policy    %s\ncommit    %s\n", policy.c_str(), commit.c_str());
  std::printf("weights read per decode token: %s (", Gb(weight_bytes).c_str());
  bool first = true;
  for (const auto& [name, bytes] : by_storage) {
    std::printf("%s%s %s", first ? "" : ", ", name.c_str(), Gb(static_cast<double>(bytes)).c_str());
    first = false;
  }
  // What the KV cache stores per token (full layers) and in its rings, as a bench cache holds it.
  const int kv_ctx = *std::max_element(contexts->begin(), contexts->end()) + a.decode;
  auto kv_probe = SequenceKvCache::Create(c.layers, kv_ctx, HostMemory(), be.kv_dtype());
  const std::string kv_line = kv_probe.ok() ? (*kv_probe)->Describe() : "";
  std::printf(")\n%s\n", kv_line.c_str());
  std::printf("%s bandwidth %.2f GB/s (median of %zu; min %.2f, max %.2f) -> roofline %.2f tok/s\n",
              be.memory().is_device() ? "device copy" : "read", bw / 1e9, bw_samples.size(), *std::min_element(bw_samples.begin(), bw_samples.end()) / 1e9,
              *std::max_element(bw_samples.begin(), bw_samples.end()) / 1e9, roofline);
  std::printf("f32 FMA peak %.1f GFLOP/s (all threads measured %.1f, one thread %.1f)\n",
              fma_peak / 1e9, fma_all / 1e9, fma_one / 1e9);
  std::printf("load average %.2f before, %.2f after (other processes on this machine)\n",
              load_before, LoadAverage());
  if (a.batch > 1) {
    std::printf("batch %d: t/s count all %d sequences' tokens; %%roofline = steps/s over the rate "
                "of one weight read per step\n", a.batch, a.batch);
  }
  if (a.kv_fill > 0) {
    std::printf("kv-fill %d: each context's positions before its last %d hold random K/V written "
                "directly; prefill t/s and GFLOP/s are those %d tokens at that depth\n",
                a.kv_fill, a.kv_fill, a.kv_fill);
  }
  std::printf("\n");
  std::printf("%8s %12s %9s %10s %11s %10s %12s %8s %9s %8s\n", "context", "prefill t/s",
              "GFLOP/s", "%FMApeak", "decode t/s", "%roofline", "median-step", "cpu%", "e2e t/s",
              "KV MB/t");
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    const double pct_roof = 100.0 * r.decode / a.batch / roofline;
    const double pct_fma = 100.0 * r.prefill_gflops * 1e9 / fma_peak;
    std::printf("%8d %12.2f %9.1f %9.1f%% %11.2f %9.1f%% %12.2f %7.0f%% %9.2f %8.1f\n", r.context,
                r.prefill, r.prefill_gflops, pct_fma, r.decode, pct_roof, r.decode_median,
                100 * r.cpu_util, r.e2e, r.kv_bytes / 1e6);
    runs[i]["decode_pct_of_roofline"] = pct_roof;
    runs[i]["prefill_pct_of_fma_peak"] = pct_fma;
  }
  const uint64_t peak = PeakResidentBytes();
  std::printf("\nresident after load %s, after the runs %s (%s mapped file pages, %s anonymous), "
              "peak %s (incl. the %.0f MiB bandwidth probe buffer); mapped %s; load %.2f s\n",
              Gb(static_cast<double>(resident_after_load)).c_str(),
              Gb(static_cast<double>(resident_after_runs)).c_str(),
              Gb(static_cast<double>(resident_file)).c_str(),
              Gb(static_cast<double>(resident_anon)).c_str(),
              Gb(static_cast<double>(peak)).c_str(), a.bandwidth_mib,
              Gb(static_cast<double>(model.mapped_bytes())).c_str(), load_s);
  // How the decode steps ran: recorded once and replayed (CUDA graphs) or op by op.
  std::string graphs_line;
  if (!a.graphs || a.profile) {
    graphs_line = a.profile ? "op by op (--profile)" : "op by op (--graphs=false)";
  } else if (!be.can_capture()) {
    graphs_line = std::string("op by op (backend=") + BackendName(be.kind()) + " records no graphs)";
  } else if (!graphs_refused.empty()) {
    graphs_line = "op by op, recording refused: " + graphs_refused;
  } else {
    graphs_line = std::to_string(graph_stats.replayed) + " replayed from CUDA graphs of " +
                  std::to_string(graph_stats.ops_per_step) + " ops, " +
                  std::to_string(graph_stats.recorded) + " recorded, " +
                  std::to_string(graph_stats.op_by_op) + " op by op";
  }
  std::printf("decode steps: %s\n", graphs_line.c_str());
  if (!profiles.empty()) std::printf("\n%s", profiles.c_str());

  ordered_json out;
  out["model"] = a.model.path;
  out["commit"] = commit;
  out["policy"] = policy;
  out["threads"] = be.pool().size();
  out["kv_fill"] = a.kv_fill;
  out["lm_head"] = StorageName(model.lm_head());
  out["kv_dtype"] = KvDtypeName(be.kv_dtype());
  out["kv_cache"] = kv_line;
  if (kv_probe.ok()) out["kv_bytes_per_token"] = (*kv_probe)->bytes_per_token();
  ordered_json storage;
  for (const auto& [name, bytes] : by_storage) storage[name] = bytes;
  out["decode_weight_bytes_by_storage"] = storage;
  out["decode_weight_bytes_per_token"] = weight_bytes;
  out["read_bandwidth_bytes_per_s"] = bw;
  out["read_bandwidth_samples"] = bw_samples;
  out["roofline_tok_s"] = roofline;
  out["fma_peak_flops"] = fma_peak;
  out["fma_measured_all_threads_flops"] = fma_all;
  out["fma_measured_one_thread_flops"] = fma_one;
  out["load_average_before"] = load_before;
  out["load_average_after"] = LoadAverage();
  out["load_seconds"] = load_s;
  out["resident_bytes_after_load"] = resident_after_load;
  out["resident_bytes_after_runs"] = resident_after_runs;
  out["resident_file_bytes_after_runs"] = resident_file;
  out["resident_anon_bytes_after_runs"] = resident_anon;
  out["peak_resident_bytes"] = peak;
  out["mapped_bytes"] = model.mapped_bytes();
  out["decode_steps"] = a.decode;
  out["batch"] = a.batch;
  out["repeat"] = a.repeat;
  out["runs"] = runs;
  out["decode_graphs"] = {{"summary", graphs_line},
                          {"recorded", graph_stats.recorded},
                          {"replayed", graph_stats.replayed},
                          {"op_by_op", graph_stats.op_by_op},
                          {"ops_per_step", graph_stats.ops_per_step},
                          {"refused", graphs_refused}};

  if (a.head_error) {
    const int n = std::min(64, contexts->front());
    auto err = HeadError(a.model.path, be, c, PromptIds(c, n, 7));
    if (!err.ok()) return fail(err.status());
    out["head_error"] = *err;
    out["head_error"]["positions"] = n;
    std::printf("\nLM head copies vs the bf16 head (%d positions):\n%s\n", n, err->dump(2).c_str());
  }
  if (!a.json_path.empty()) {
    std::ofstream f(a.json_path);
    f << out.dump(2) << "\n";
    if (!f) return fail(IoError("cannot write " + a.json_path));
  }
  return 0;
}

}  // namespace

RunFn AddBenchCommand(CLI::App& app) {
  auto a = std::make_shared<BenchArgs>();
  CLI::App* sub = app.add_subcommand("bench", "Measure prefill and decode speed against the roofline");
  AddModelOptions(sub, &a->model);
  sub->add_option("--contexts", a->contexts, "Prompt lengths, comma-separated (41,521,2057)");
  sub->add_option("--decode", a->decode, "Decode steps after each prompt (64)");
  sub->add_option("--repeat", a->repeat, "Runs per prompt length; medians are reported (1)");
  sub->add_option("--batch", a->batch, "Sequences decoded together in each step (1)");
  sub->add_option("--json", a->json_path, "Also write the results as JSON here");
  sub->add_option("--prefill-chunk", a->prefill_chunk, "Prompt tokens per prefill step (512)");
  sub->add_option("--bandwidth-mib", a->bandwidth_mib, "Buffer of the read-bandwidth probe (1024)");
  sub->add_option("--kv-fill", a->kv_fill,
                  "Run only the last N tokens of each context, after filling the cache before them "
                  "with random K/V (host caches): decode and prefill at a depth whose full prefill "
                  "would take hours; prefill figures are those N tokens' (0: off)");
  sub->add_flag("--profile", a->profile, "Per-category decode time (ms/token and %; runs op by op)");
  sub->add_option("--graphs", a->graphs,
                  "Record decode steps as CUDA graphs and replay them, where the backend can "
                  "(true; false: op by op)");
  sub->add_flag("--head-error", a->head_error,
                "Logits error of the q8 / q4 / q8_0 / q6_k LM head copies vs bf16 (extra loads + "
                "forwards)");
  return [a] { return Run(*a); };
}

}  // namespace g4::cli
