// `g4 serve`: the OpenAI-compatible server. Start-up order: the device policy line, the
// model and tokenizer mapped, the port bound (/health answers 503), the fixed shapes warmed
// up, then ready. SIGINT/SIGTERM: stop accepting, let running requests finish for a bounded
// time, cancel the rest, exit 0.
#include <signal.h>

#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "backend_setup.h"
#include "chat/chat.h"
#include "chat/model_tokenizer.h"
#include "commands.h"
#include "core/log.h"
#include "core/process_stats.h"
#include "loader/hf_cache.h"
#include "runtime/grammar/grammar.h"
#include "runtime/scheduler/engine.h"
#include "server/metrics.h"
#include "server/metrics_observer.h"
#include "server/openai/response.h"
#include "server/server.h"
#include "tokenizer/tokenizer.h"

namespace g4::cli {
namespace {

struct ServeArgs {
  ModelFlags model;
  std::string served_name;
  ServerOptions server;
  EngineOptions engine;
  int shutdown_grace_s = 10;
  bool stop_on_degenerate = false;
  std::string kv_memory;  // --kv-memory; empty: half the available memory (host backends)
};

// "1073741824", "512M", "8G", "8GiB", "1.5G": bytes, the suffixes K/M/G/T in powers of 1024.
StatusOr<size_t> ParseBytes(const std::string& text) {
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::string unit = text.substr(used);
  if (unit.ends_with("iB")) unit.resize(unit.size() - 2);
  if (unit.size() > 1 && unit.back() == 'B') unit.pop_back();
  double scale = 1;
  if (unit.size() == 1) {
    const size_t power = std::string("KMGT").find(static_cast<char>(std::toupper(unit[0])));
    if (power != std::string::npos) scale = std::ldexp(1.0, 10 * static_cast<int>(power + 1));
    if (power != std::string::npos || unit == "B") unit.clear();
  }
  if (used == 0 || !unit.empty() || !(value > 0) || !(value * scale <= 1e18)) {
    return InvalidArgument("--kv-memory '" + text + "': expected a positive size in bytes, "
                           "optionally with K, M, G or T (powers of 1024), e.g. 8G");
  }
  return static_cast<size_t>(value * scale);
}

// Sampling defaults from generation_config.json, as vLLM loads them.
SamplingParams GenerationDefaults(const Checkpoint& checkpoint) {
  SamplingParams p;
  const nlohmann::json* gen = checkpoint.generation_config();
  if (!gen || !gen->is_object()) return p;
  const auto& g = *gen;
  if (g.contains("temperature") && g["temperature"].is_number()) p.temperature = g["temperature"].get<float>();
  if (g.contains("top_k") && g["top_k"].is_number_integer()) p.top_k = g["top_k"].get<int>();
  if (g.contains("top_p") && g["top_p"].is_number()) p.top_p = g["top_p"].get<float>();
  return p;
}

int Run(ServeArgs& a) {
  auto fail = LogFailure;
  if (a.server.port < 0 || a.server.port > 65535) {  // checked before the model is read
    return fail(InvalidArgument("--port " + std::to_string(a.server.port) +
                                " is outside 0..65535 (0: any free port)"));
  }
  // Signals go to the waiting main thread only (blocked before any thread starts).
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  if (!a.kv_memory.empty()) {
    auto bytes = ParseBytes(a.kv_memory);
    if (!bytes.ok()) return fail(bytes.status());
    a.engine.kv_memory = *bytes;
  }
  auto session = OpenTextSession(a.model);  // the device policy line first
  if (!session.ok()) return fail(session.status());
  // The KV budget by default: half of what the machine has left once the model is mapped (a
  // device backend keeps the engine's default, max_batch caches of --ctx-size).
  if (a.kv_memory.empty() && !session->backend->memory().is_device()) {
    a.engine.kv_memory = AvailableMemoryBytes() / 2;
  }
  const CausalLM& model = session->model();
  const std::unique_ptr<Tokenizer>* tokenizer = &session->tokenizer.tokenizer;
  const ChatStyle* style = &session->tokenizer.chat_style;
  const ModelInfo& info = model.info();
  if (a.engine.ctx_size > info.max_context) {
    return fail(InvalidArgument("--ctx-size " + std::to_string(a.engine.ctx_size) +
                                " exceeds max_position_embeddings " +
                                std::to_string(info.max_context)));
  }

  ServingState state;
  state.tokenizer = tokenizer->get();
  state.chat_style = *style;
  state.created = openai::UnixNow();
  // A repo id is served under its own name (ORG/NAME), a local path under its last part.
  std::error_code ec;
  const bool repo_id = LooksLikeHubRef(a.model.path) && !std::filesystem::exists(a.model.path, ec);
  state.defaults.model_name =
      !a.served_name.empty() ? a.served_name
      : repo_id              ? a.model.path
                             : std::filesystem::path(a.model.path).filename().string();
  if (state.defaults.model_name.empty()) state.defaults.model_name = "g4";
  state.defaults.max_model_len = a.engine.ctx_size;
  state.defaults.sampling = GenerationDefaults(*session->loaded.checkpoint);
  state.defaults.stop_token_ids.assign(info.eos_ids.begin(), info.eos_ids.end());
  state.defaults.stop_on_degenerate = a.stop_on_degenerate;

  Metrics metrics(state.defaults.model_name);
  MetricsObserver observer(&metrics);
  Engine engine(model, *session->backend, tokenizer->get(), a.engine, &observer);
  LogInfo(engine.DescribeKvCache() + "; up to " + std::to_string(a.engine.max_batch) +
          " sequences; prefix reuse " + (a.engine.prefix_reuse ? "on" : "off") +
          "; KV memory " +
          std::to_string(engine.Stats().kv_budget_bytes / 1048576) + " MiB (" +
          (!a.kv_memory.empty()                        ? "--kv-memory"
           : session->backend->memory().is_device()    ? "max_batch full-context caches"
                                                       : "half the available memory") + ")");
  Server server(a.server, &metrics);
  const Status bound = server.Bind();
  if (!bound.ok()) return fail(bound);
  server.Start();
  LogInfo("listening on http://" + a.server.host + ":" + std::to_string(server.port()) +
          " (model " + state.defaults.model_name + "; warming up, /health is 503 until ready)");
  const auto t0 = std::chrono::steady_clock::now();
  const Status warm = engine.Warmup();
  if (!warm.ok()) return fail(warm.WithContext("warm-up"));
  // Grammar masks (tools, response_format) need the vocabulary as a trie: built once, here.
  state.vocab_index = grammar::VocabIndex::Build(**tokenizer);
  LogInfo("warm-up done in " +
          std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::steady_clock::now() - t0).count()) + " ms; ready");
  engine.Start();
  state.engine = &engine;
  server.SetReady(state);

  int sig = 0;
  sigwait(&signals, &sig);
  LogInfo(std::string("received ") + (sig == SIGINT ? "SIGINT" : "SIGTERM") +
          ": finishing in-flight requests (up to " + std::to_string(a.shutdown_grace_s) + " s)");
  server.SetDraining();
  engine.Shutdown(std::chrono::seconds(a.shutdown_grace_s));
  server.Stop();
  LogInfo("stopped");
  return 0;
}

}  // namespace

RunFn AddServeCommand(CLI::App& app) {
  auto a = std::make_shared<ServeArgs>();
  CLI::App* sub = app.add_subcommand("serve", "Serve the OpenAI API (chat, completions, SSE)");
  AddModelOptions(sub, &a->model);
  sub->add_option("--host", a->server.host, "Address to bind (default 127.0.0.1)");
  sub->add_option("--port", a->server.port, "Port (0: any free port)");
  sub->add_option("--api-key", a->server.api_key, "Require 'Authorization: Bearer KEY'");
  sub->add_option("--served-model-name", a->served_name,
                  "Model name (default: the folder name, or ORG/NAME)");
  sub->add_option("--ctx-size", a->engine.ctx_size, "Most tokens per sequence");
  sub->add_option("--max-batch", a->engine.max_batch, "Sequences decoded together");
  sub->add_option("--max-waiting", a->engine.max_waiting, "Queued requests before 503");
  sub->add_option("--prefill-budget", a->engine.prefill_budget, "Prompt tokens per engine step");
  sub->add_option("--prefix-reuse", a->engine.prefix_reuse,
                  "Keep finished requests' KV caches (within --kv-memory) for later prompts that "
                  "start with their tokens: a chat's next turn continues its cache, the same "
                  "prompt again starts from a snapshot, a prompt leaving one part way in (the "
                  "same system prompt) from a copy of the shared part (default true)");
  sub->add_option("--kv-memory", a->kv_memory,
                  "Bytes the running sequences' KV caches may reserve together (e.g. 8G): a "
                  "request starts when its cache (prompt + max_tokens positions) fits and waits "
                  "otherwise; one that can never fit is a 400 (default: half the available "
                  "memory; a GPU: max-batch caches of --ctx-size)");
  sub->add_option("--shutdown-grace", a->shutdown_grace_s, "Seconds in-flight requests get on SIGTERM");
  sub->add_option("--read-timeout", a->server.read_timeout_s,
                  "Seconds a client may stay silent while sending a request (default 10)");
  sub->add_option("--request-timeout", a->server.request_timeout_s,
                  "Seconds a whole request (line, headers, body) may take to arrive (default 30)");
  sub->add_flag("--stop-on-degenerate", a->stop_on_degenerate,
               "End a response when its token-loop check trips (finish_reason stop; a request's "
               "stop_on_degenerate overrides it)");
  return [a] { return Run(*a); };
}

}  // namespace g4::cli
