// Engine: continuous batching. Requests join and leave a shared step: every step runs one
// ForwardBatch over the weights for all running sequences — one token for each decoding
// sequence plus prefill chunks within a token budget, so a long prompt is interleaved with the
// running streams instead of stalling them. One engine thread owns the model, the backend and
// every KV cache; submitters talk to it only through RequestHandle (events out, cancel flag in).
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "model/causal_lm.h"
#include "runtime/kv_cache/kv_cache.h"
#include "runtime/scheduler/kept_caches.h"
#include "runtime/scheduler/request.h"
#include "runtime/sequence.h"
#include "tokenizer/tokenizer.h"

namespace g4 {

struct EngineOptions {
  int max_batch = 8;         // sequences running at once
  int max_waiting = 64;      // queued requests beyond that; more are refused (Unavailable)
  int ctx_size = 4096;       // most positions one sequence may hold
  int prefill_budget = 256;  // prompt tokens per step, shared by all prefilling sequences
  // Bytes the running sequences' KV caches may reserve together (--kv-memory). A request
  // reserves its cache for prompt + max_tokens positions (at most ctx_size) when it starts,
  // less the whole blocks it shares with a kept cache it branches from (KeptCaches: counted
  // once, in that cache's bytes); it waits in the queue until that fits, and one that could
  // never fit is refused at Submit.
  // 0: room for max_batch caches of ctx_size positions (every request fits its slot).
  size_t kv_memory = 0;
  // Prefix reuse: a finished sequence's cache is kept (within kv_memory, least recently used
  // evicted first) for a later request whose prompt starts with its tokens: the next turn of a
  // chat continues it in place, the same prompt again resumes from a snapshot of the sliding
  // rings taken one token before the prompt's end.
  bool prefix_reuse = true;
};

// Hooks for metrics; called on the engine thread.
class EngineObserver {
 public:
  virtual ~EngineObserver() = default;
  virtual void OnPromptTokens(int64_t n) {}
  virtual void OnFirstToken(double seconds_since_arrival) {}
  virtual void OnToken(double seconds_since_previous) {}
  virtual void OnFinished(const GenerationResult& result, double seconds_since_arrival) {}
  // A step that ran only decode tokens: its tokens and duration (the decode-speed gauge).
  virtual void OnDecodeStep(int64_t tokens, double seconds) {}
  // A request started: its prompt tokens, and how many of them a kept cache already held.
  virtual void OnPrefixLookup(int64_t prompt_tokens, int64_t cached_tokens) {}
};

struct EngineStats {
  int running = 0;
  int waiting = 0;
  double kv_cache_usage = 0.0;  // reserved KV bytes of running sequences / kv_budget_bytes
  size_t kv_budget_bytes = 0;   // EngineOptions::kv_memory, or its default
  // KV memory actually allocated by running sequences (refreshed after every step): blocks of
  // the full-attention layers, and bytes (rings + blocks). Both fall to 0 once all finish.
  int64_t kv_blocks_in_use = 0;
  int64_t kv_bytes_in_use = 0;
  // Finished sequences' caches kept for prefix reuse (EngineOptions::prefix_reuse), and their
  // bytes (with their snapshots; a block several hold counted once, KeptCaches::bytes); they
  // count against kv_budget_bytes and are evicted first.
  int retained_caches = 0;
  size_t retained_bytes = 0;
  // How decode steps ran since start-up, warm-up included: replayed or recorded as a CUDA graph,
  // or op by op (every decode step on a backend without graphs).
  StepGraphs::Stats decode_steps;
};

class Engine {
 public:
  // The most batch sizes whose decode steps are kept recorded (each keeps a workspace of about
  // a logits row, 1 MiB at Gemma 4's vocabulary, per sequence); larger batch sizes share the
  // least recently used entries.
  static constexpr int kMaxGraphBatchSizes = 32;

  // The model, backend and tokenizer must outlive the engine; tokenizer may be null (then no
  // text, and stop strings are refused).
  Engine(const CausalLM& model, Backend& backend, const Tokenizer* tokenizer,
         EngineOptions options, EngineObserver* observer = nullptr);
  ~Engine();

  void Start();
  // Runs the shapes the engine will serve once (a prefill chunk and a full decode batch; where
  // the backend records graphs, two decode steps at every batch size up to max_batch, so each
  // size's step is recorded), so the first request does not pay for page faults, first-touch
  // allocations or op-by-op steps.
  Status Warmup();
  // Stops accepting, lets running requests finish for up to `grace`, cancels the rest, joins.
  void Shutdown(std::chrono::milliseconds grace);

  // Queues a request. InvalidArgument if it can never run (empty prompt, prompt >= context,
  // a KV cache larger than kv_memory, bad options), Unavailable if the queue is full or the
  // engine is shutting down.
  StatusOr<std::shared_ptr<RequestHandle>> Submit(EngineRequest request);

  EngineStats Stats() const;
  const EngineOptions& options() const { return options_; }
  // What the engine serves: the model's vocabulary, context, special ids and layers.
  const ModelInfo& model_info() const { return model_.info(); }
  // "KV cache: ..." for a sequence of ctx_size positions (SequenceKvCache::Describe).
  std::string DescribeKvCache() const;
  // The bytes a sequence of `positions` positions reserves (SequenceKvCache::reserved_bytes).
  size_t KvBytesFor(int64_t positions) const;

 private:
  struct Active;
  // A request in the queue, with the KV bytes it will reserve.
  struct Queued {
    EngineRequest req;
    std::shared_ptr<RequestHandle> handle;
    size_t kv_bytes = 0;
    ResumePlan plan;  // where it resumes, decided when it is admitted
  };
  void Loop();
  void Admit(std::deque<Queued>& batch);
  void Step();
  void Finish(Active& a, const std::string& reason);
  // Where the prompt of an admitted request resumes (KeptCaches::Take; engine thread).
  Resumed TakeRetained(const ResumePlan& plan);
  // Keeps a finished sequence's cache (engine thread).
  void Retain(Active& a);
  // a's cache as it is now, or null (logged) when that fails (prefix reuse).
  std::unique_ptr<KvSnapshot> SnapshotOf(const Active& a) const;
  // Samples a's next token from `logits`, tells its submitter, finishes it when that was the
  // last (engine thread).
  void Deliver(Active& a, const std::vector<float>& logits);
  // Evicts kept caches, least recently used first, until `need` more bytes fit beside the
  // running sequences' reservations `reserved` (mu_ held).
  void EvictRetained(size_t reserved, size_t need);
  // Ends queued requests whose submitter cancelled them, before they cost a cache (engine
  // thread; they also stop holding a place in the queue).
  void DropCancelledWaiting();
  // Recomputes the KV-in-use stats from active_ and copies the decode-step counts (engine
  // thread).
  void UpdateStats();
  // Says once why decode steps are not recorded as graphs, when the backend refused.
  void LogGraphRefusal();

  const CausalLM& model_;
  Backend& backend_;
  const Tokenizer* tokenizer_;
  EngineOptions options_;
  EngineObserver* observer_;
  size_t kv_budget_bytes_ = 0;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Queued> waiting_;
  bool accepting_ = true;
  bool stop_ = false;
  int running_count_ = 0;
  // Taken from waiting_ by the engine thread and not yet counted as running: a draining
  // Shutdown() must not take the gap between the two for an empty engine.
  int admitting_ = 0;
  size_t reserved_bytes_ = 0;
  int64_t kv_blocks_in_use_ = 0, kv_bytes_in_use_ = 0;
  KeptCaches kept_;  // engine thread, but under mu_
  StepGraphs::Stats decode_steps_;

  std::vector<std::unique_ptr<Active>> active_;  // engine thread only
  // Recorded decode steps (a CUDA backend's graphs), one entry per batch size up to max_batch
  // (at most kMaxGraphBatchSizes); Warmup, then the engine thread.
  StepGraphs graphs_;
  bool graph_refusal_logged_ = false;
  std::thread thread_;
};

}  // namespace g4
