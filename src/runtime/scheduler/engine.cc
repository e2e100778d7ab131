#include "runtime/scheduler/engine.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/log.h"
#include "tokenizer/stream_decoder.h"

namespace g4 {
namespace {

using Clock = std::chrono::steady_clock;
double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// log-softmax of the raw model distribution: the sampled token's logprob and the best `k`.
TokenLogprob Logprobs(std::span<const float> logits, int32_t token, int k) {
  TokenLogprob lp;
  lp.token = token;
  const float max = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float x : logits) sum += std::exp(static_cast<double>(x - max));
  const float log_z = max + static_cast<float>(std::log(sum));
  lp.logprob = logits[static_cast<size_t>(token)] - log_z;
  if (k > 0) {
    std::vector<int32_t> idx(logits.size());
    std::iota(idx.begin(), idx.end(), 0);
    const size_t kk = std::min(idx.size(), static_cast<size_t>(k));
    std::partial_sort(idx.begin(), idx.begin() + static_cast<int64_t>(kk), idx.end(),
                      [&](int32_t a, int32_t b) {
                        return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
                      });
    for (size_t i = 0; i < kk; ++i) lp.top.emplace_back(idx[i], logits[idx[i]] - log_z);
  }
  return lp;
}

}  // namespace

struct Engine::Active {
  EngineRequest req;
  std::shared_ptr<RequestHandle> handle;
  std::unique_ptr<SequenceKvCache> cache;
  std::unique_ptr<StreamDecoder> decoder;
  std::unique_ptr<Sequence> seq;
  size_t prefilled = 0;      // prompt tokens in the cache
  int32_t next = -1;         // the token to run in the next decode step
  std::vector<int32_t> ids;  // the tokens in the cache, position by position (prefix reuse)
  // The cache when the prompt was in, and the prompt's last logits (prefix reuse: the same
  // prompt again starts from these, without a forward pass).
  std::unique_ptr<KvSnapshot> snapshot;
  std::vector<float> snapshot_logits;
  int32_t branch_at = 0;                // Resumed::branch
  std::unique_ptr<KvSnapshot> branch;   // the cache at branch_at
  // What it added to reserved_bytes_ (its cache's reservation less the blocks it shares with
  // the kept cache it pins, Resumed::pinned), and that pin.
  size_t reserved = 0;
  uint64_t pinned = 0;
  Clock::time_point arrival, prefill_done, last_token;
  bool got_first = false;
  GenerationStats stats;
};

Engine::Engine(const CausalLM& model, Backend& backend, const Tokenizer* tokenizer,
               EngineOptions options, EngineObserver* observer)
    : model_(model), backend_(backend), tokenizer_(tokenizer), options_(options),
      observer_(observer), graphs_(std::clamp(options.max_batch, 1, kMaxGraphBatchSizes)) {
  options_.max_batch = std::max(1, options_.max_batch);
  options_.prefill_budget = std::max(1, options_.prefill_budget);
  options_.ctx_size = std::clamp(options_.ctx_size, 1, model.info().max_context);
  kv_budget_bytes_ = options_.kv_memory > 0 ? options_.kv_memory
                                            : KvBytesFor(options_.ctx_size) * options_.max_batch;
}

size_t Engine::KvBytesFor(int64_t positions) const {
  // A probe: creating a cache allocates nothing until its first write.
  auto probe = SequenceKvCache::Create(
      model_.info().layers, static_cast<int>(std::clamp<int64_t>(positions, 1, options_.ctx_size)),
      HostMemory(), backend_.kv_dtype());
  return probe.ok() ? (*probe)->reserved_bytes() : 0;
}

Engine::~Engine() { Shutdown(std::chrono::milliseconds(0)); }

std::string Engine::DescribeKvCache() const {
  auto probe = SequenceKvCache::Create(model_.info().layers, options_.ctx_size, HostMemory(),
                                       backend_.kv_dtype());
  return probe.ok() ? (*probe)->Describe() : probe.status().message();
}

void Engine::Start() {
  if (!thread_.joinable()) thread_ = std::thread([this] { Loop(); });
}

Status Engine::Warmup() {
  const ModelInfo& c = model_.info();
  // Decode warm-up: where the backend records graphs, two steps at each batch size up to
  // max_batch (as many sizes as graphs_ keeps, and as the context leaves room for: item 0 takes
  // part in every step), so that each size's buffers are sized and its step recorded, and a
  // serving step of any of those sizes is recorded at once rather than run op by op (these
  // caches die here: the first serving step of a size records over the serving caches).
  // Elsewhere one step of the full batch.
  const bool graphs = backend_.can_capture();
  const int sizes = graphs ? std::min({options_.max_batch, graphs_.max_entries(),
                                       (options_.ctx_size - 2) / 2})
                           : 0;
  const int decode_tokens = graphs ? 2 * sizes : 1;
  const int prefill =
      std::max(1, std::min(options_.prefill_budget, options_.ctx_size - 1 - decode_tokens));
  std::vector<std::unique_ptr<SequenceKvCache>> caches;
  std::vector<int32_t> prompt(static_cast<size_t>(prefill), c.bos_id);
  std::vector<CausalLM::BatchItem> items;
  for (int b = 0; b < options_.max_batch; ++b) {
    G4_ASSIGN_OR_RETURN(auto cache, SequenceKvCache::Create(c.layers, options_.ctx_size,
                                                            backend_.memory(), backend_.kv_dtype()));
    caches.push_back(std::move(cache));
    const size_t n = b == 0 ? prompt.size() : 1;  // one prefill chunk, the rest one token
    items.push_back({std::span<const int32_t>(prompt.data(), n), 0, caches.back().get(), true});
  }
  G4_RETURN_IF_ERROR(model_.ForwardBatch(backend_, items).status());
  auto decode = [&](size_t batch) -> Status {
    for (size_t b = 0; b < batch; ++b) {
      items[b] = {std::span<const int32_t>(prompt.data(), 1), caches[b]->size(), caches[b].get(),
                  true};
    }
    return model_
        .ForwardBatch(backend_, std::span<const CausalLM::BatchItem>(items.data(), batch),
                      nullptr, &graphs_)
        .status();
  };
  if (!graphs) {
    G4_RETURN_IF_ERROR(decode(items.size()));
  } else {
    for (int size = 1; size <= sizes; ++size) {
      for (int step = 0; step < 2; ++step) G4_RETURN_IF_ERROR(decode(static_cast<size_t>(size)));
    }
    LogGraphRefusal();  // said now, not at the first request
  }
  std::lock_guard<std::mutex> lock(mu_);
  decode_steps_ = graphs_.stats();
  return Status();
}

void Engine::LogGraphRefusal() {
  if (graph_refusal_logged_ || graphs_.refused().empty()) return;
  graph_refusal_logged_ = true;
  LogWarning("decode steps run op by op (no CUDA graph): " + graphs_.refused());
}

void Engine::Shutdown(std::chrono::milliseconds grace) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    accepting_ = false;
    cv_.wait_for(lock, grace, [this] {
      return waiting_.empty() && admitting_ == 0 && running_count_ == 0;
    });
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  // Anything still queued never ran: tell its submitter.
  std::lock_guard<std::mutex> lock(mu_);
  for (Queued& q : waiting_) {
    RequestEvent ev;
    ev.kind = RequestEvent::Kind::kFinished;
    ev.result.finish_reason = "cancelled";
    q.handle->Push(std::move(ev));
  }
  waiting_.clear();
}

StatusOr<std::shared_ptr<RequestHandle>> Engine::Submit(EngineRequest request) {
  const int64_t P = static_cast<int64_t>(request.prompt.size());
  if (P == 0) return InvalidArgument("empty prompt: at least one token id is needed");
  if (P >= options_.ctx_size) {
    return InvalidArgument("prompt of " + std::to_string(P) +
                           " tokens leaves no room in the context of " +
                           std::to_string(options_.ctx_size) + " tokens");
  }
  for (size_t t = 0; t < request.prompt.size(); ++t) {
    const int32_t id = request.prompt[t];
    if (id < 0 || id >= model_.info().input_vocab) {
      return InvalidArgument("token id " + std::to_string(id) + " at position " +
                             std::to_string(t) + " is outside the vocabulary of " +
                             std::to_string(model_.info().input_vocab));
    }
  }
  G4_RETURN_IF_ERROR(ValidateGenerationOptions(request.options, tokenizer_ != nullptr));
  const int64_t positions = std::min<int64_t>(P + request.options.max_tokens, options_.ctx_size);
  const size_t kv_bytes = KvBytesFor(positions);
  if (kv_bytes > kv_budget_bytes_) {
    return InvalidArgument("the request needs " + std::to_string(kv_bytes) +
                           " bytes of KV cache (" + std::to_string(positions) +
                           " positions: the prompt's " + std::to_string(P) +
                           " + max_tokens) but the server's KV memory is " +
                           std::to_string(kv_budget_bytes_) +
                           " bytes (--kv-memory); lower max_tokens or shorten the prompt");
  }
  auto handle = std::make_shared<RequestHandle>();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!accepting_) return Unavailable("the server is shutting down");
    if (static_cast<int>(waiting_.size()) >= options_.max_waiting) {
      return Unavailable("the request queue is full (" + std::to_string(options_.max_waiting) +
                         " waiting); retry later");
    }
    waiting_.push_back(Queued{std::move(request), handle, kv_bytes, ResumePlan()});
  }
  cv_.notify_all();
  return handle;
}

EngineStats Engine::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  EngineStats s;
  s.running = running_count_;
  s.waiting = static_cast<int>(waiting_.size());
  s.kv_cache_usage = kv_budget_bytes_ ? static_cast<double>(reserved_bytes_) / kv_budget_bytes_ : 0.0;
  s.kv_budget_bytes = kv_budget_bytes_;
  s.retained_caches = kept_.size();
  s.retained_bytes = kept_.bytes();
  s.kv_blocks_in_use = kv_blocks_in_use_;
  s.kv_bytes_in_use = kv_bytes_in_use_;
  s.decode_steps = decode_steps_;
  return s;
}

void Engine::DropCancelledWaiting() {
  std::vector<std::shared_ptr<RequestHandle>> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      if (it->handle->cancelled()) {
        dropped.push_back(std::move(it->handle));
        it = waiting_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& handle : dropped) {
    RequestEvent ev;
    ev.kind = RequestEvent::Kind::kFinished;
    ev.result.finish_reason = "cancelled";
    if (observer_) observer_->OnFinished(ev.result, 0.0);
    handle->Push(std::move(ev));
  }
}

void Engine::UpdateStats() {
  int64_t blocks = 0, bytes = 0;
  for (const auto& a : active_) {
    if (a->seq->finished()) continue;
    blocks += static_cast<int64_t>(a->cache->num_blocks());
    bytes += static_cast<int64_t>(a->cache->allocated_bytes());
  }
  std::lock_guard<std::mutex> lock(mu_);
  kv_blocks_in_use_ = blocks;
  kv_bytes_in_use_ = bytes;
  decode_steps_ = graphs_.stats();
}

void Engine::Loop() {
  for (;;) {
    DropCancelledWaiting();
    std::deque<Queued> admitted;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_ || !waiting_.empty() || !active_.empty(); });
      if (stop_) break;
      // In arrival order while a slot is free and the next one's KV reservation fits (it waits
      // for running ones to finish otherwise; Submit refused any that could never fit).
      // Kept caches give way to it first (least recently used first), except one it branches
      // from: the blocks it shares with that one are counted once, in the kept cache's bytes.
      size_t reserved = reserved_bytes_;
      while (static_cast<int>(active_.size() + admitted.size()) < options_.max_batch &&
             !waiting_.empty()) {
        Queued& q = waiting_.front();
        if (options_.prefix_reuse) q.plan = kept_.Plan(q.req.prompt);
        size_t need = q.kv_bytes - q.plan.shared_bytes;
        auto fits = [&] { return reserved + kept_.bytes() + need <= kv_budget_bytes_; };
        if (!fits()) EvictRetained(reserved, need);
        if (!fits() && q.plan.kept != 0) {
          // Not beside the cache it would resume from: that one may go too (as the least
          // recently used), and the request resumes from what stays, if anything.
          kept_.Release(q.plan);
          q.plan = ResumePlan();
          need = q.kv_bytes;
          EvictRetained(reserved, need);
          if (fits()) {
            q.plan = kept_.Plan(q.req.prompt);
            need -= q.plan.shared_bytes;
          }
        }
        if (!fits()) {
          kept_.Release(q.plan);
          q.plan = ResumePlan();
          break;
        }
        reserved += need;
        admitted.push_back(std::move(waiting_.front()));
        waiting_.pop_front();
      }
      admitting_ = static_cast<int>(admitted.size());
    }
    Admit(admitted);
    {
      std::lock_guard<std::mutex> lock(mu_);
      admitting_ = 0;  // each is running now, or finished (counted either way)
    }
    Step();
    UpdateStats();
  }
  for (auto& a : active_) {
    if (!a->seq->finished()) Finish(*a, "cancelled");
  }
  active_.clear();
  std::lock_guard<std::mutex> lock(mu_);
  running_count_ = 0;
  reserved_bytes_ = 0;
  kept_.Clear();
  kv_blocks_in_use_ = 0;
  kv_bytes_in_use_ = 0;
}

void Engine::Admit(std::deque<Queued>& batch) {
  for (Queued& q : batch) {
    EngineRequest& req = q.req;
    std::shared_ptr<RequestHandle>& handle = q.handle;
    auto a = std::make_unique<Active>();
    a->arrival = Clock::now();
    const int64_t want = static_cast<int64_t>(req.prompt.size()) + req.options.max_tokens;
    const int positions = static_cast<int>(std::min<int64_t>(want, options_.ctx_size));
    Resumed from = TakeRetained(q.plan);
    const int32_t cached = from.cached;
    a->cache = std::move(from.cache);
    a->snapshot = std::move(from.snapshot);
    a->snapshot_logits = std::move(from.logits);
    a->branch_at = from.branch;
    a->branch = std::move(from.branch_snapshot);  // replaced if the prompt reaches branch_at
    if (a->cache) {
      a->cache->set_max_context(positions);
      a->prefilled = static_cast<size_t>(cached);
      a->ids.assign(req.prompt.begin(), req.prompt.begin() + cached);
    } else {
      auto cache = SequenceKvCache::Create(model_.info().layers, positions, backend_.memory(),
                                           backend_.kv_dtype());
      if (!cache.ok()) {
        RequestEvent ev;
        ev.kind = RequestEvent::Kind::kFinished;
        ev.result.finish_reason = "error: " + cache.status().message();
        handle->Push(std::move(ev));
        continue;
      }
      a->cache = std::move(*cache);
    }
    if (observer_) {
      observer_->OnPrefixLookup(static_cast<int64_t>(req.prompt.size()), cached);
    }
    std::function<std::string(int32_t)> piece;
    if (tokenizer_) {
      DecodeOptions d;
      d.skip_special = req.skip_special_tokens;
      a->decoder = std::make_unique<StreamDecoder>(*tokenizer_, d);
      StreamDecoder* dec = a->decoder.get();
      piece = [dec](int32_t id) {
        auto text = dec->Push(id);
        return text.ok() ? std::move(*text) : std::string();
      };
    }
    if (tokenizer_ && !req.options.degeneracy.is_word) {  // word runs trip sooner
      const Tokenizer* tok = tokenizer_;
      req.options.degeneracy.is_word = [tok](int32_t id) { return tok->IsWordToken(id); };
    }
    a->seq = std::make_unique<Sequence>(req.prompt, req.options, std::move(piece));
    a->stats.prompt_tokens = static_cast<int64_t>(req.prompt.size());
    a->stats.cached_tokens = cached;
    a->req = std::move(req);
    a->handle = std::move(handle);
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++running_count_;
      a->reserved = a->cache->reserved_bytes() - from.shared_bytes;
      a->pinned = from.pinned;
      reserved_bytes_ += a->reserved;
    }
    active_.push_back(std::move(a));
    Active& added = *active_.back();
    if (added.seq->finished()) {
      Finish(added, added.seq->result().finish_reason);  // max_tokens 0
    } else if (added.prefilled == added.req.prompt.size()) {
      // The same prompt as a kept cache's: its first token comes from the kept logits.
      added.prefill_done = Clock::now();
      added.stats.prefill_seconds = Seconds(added.arrival, added.prefill_done);
      Deliver(added, added.snapshot_logits);
    }
  }
}

void Engine::Finish(Active& a, const std::string& reason) {
  a.seq->Finish(reason);
  const auto now = Clock::now();
  RequestEvent ev;
  ev.kind = RequestEvent::Kind::kFinished;
  ev.result = a.seq->result();
  if (a.decoder) {  // an unfinished UTF-8 tail held back by the stream decoder
    const std::string tail = a.decoder->Finish();
    if (!tail.empty() && ev.result.finish_reason != "cancelled") {
      RequestEvent text_ev;
      text_ev.text = tail;
      a.handle->Push(std::move(text_ev));
      ev.result.text += tail;
    }
  }
  a.stats.generated_tokens = static_cast<int64_t>(ev.result.tokens.size());
  a.stats.total_seconds = Seconds(a.arrival, now);
  ev.result.stats = a.stats;
  if (observer_) observer_->OnFinished(ev.result, a.stats.total_seconds);
  {
    // Free the slot before telling the submitter, so what it reads next is already true.
    std::lock_guard<std::mutex> lock(mu_);
    --running_count_;
    reserved_bytes_ -= a.reserved;
    if (a.pinned) kept_.Unpin(a.pinned);
    a.pinned = 0;
    kv_blocks_in_use_ = std::max<int64_t>(0, kv_blocks_in_use_ - static_cast<int64_t>(a.cache->num_blocks()));
    kv_bytes_in_use_ = std::max<int64_t>(0, kv_bytes_in_use_ - static_cast<int64_t>(a.cache->allocated_bytes()));
  }
  if (options_.prefix_reuse && !reason.starts_with("error")) Retain(a);
  // A draining Shutdown() waits for the last running request: wake it now, not at the grace's end.
  cv_.notify_all();
  a.handle->Push(std::move(ev));
}

std::unique_ptr<KvSnapshot> Engine::SnapshotOf(const Active& a) const {
  auto snap = a.cache->Snapshot();
  if (snap.ok()) return std::move(*snap);
  LogWarning("prefix reuse: no snapshot: " + snap.status().ToString());
  return nullptr;
}

Resumed Engine::TakeRetained(const ResumePlan& plan) {
  std::lock_guard<std::mutex> lock(mu_);
  return kept_.Take(plan);
}

void Engine::Retain(Active& a) {
  if (!a.cache || a.cache->size() == 0 ||
      a.ids.size() != static_cast<size_t>(a.cache->size())) {
    return;
  }
  KeptCache r;
  r.cache = std::move(a.cache);
  r.ids = std::move(a.ids);
  r.snapshot = std::move(a.snapshot);
  r.logits = std::move(a.snapshot_logits);
  r.branch = std::move(a.branch);
  std::lock_guard<std::mutex> lock(mu_);
  kept_.Keep(std::move(r));
  EvictRetained(reserved_bytes_, 0);  // within the budget beside the running ones
}

void Engine::EvictRetained(size_t reserved, size_t need) {
  const size_t used = reserved + need;
  kept_.EvictTo(used < kv_budget_bytes_ ? kv_budget_bytes_ - used : 0);
}

void Engine::Step() {
  // A cancelled request (client gone) is dropped before it costs another step.
  for (auto& a : active_) {
    if (a->handle->cancelled() && !a->seq->finished()) Finish(*a, "cancelled");
  }
  std::erase_if(active_, [](const auto& a) { return a->seq->finished(); });
  if (active_.empty()) return;

  std::vector<CausalLM::BatchItem> items;
  std::vector<Active*> owners;
  std::vector<size_t> prefill_len;  // 0 for a decode item
  int budget = options_.prefill_budget;
  bool any_prefill = false;
  for (auto& a : active_) {
    const size_t P = a->req.prompt.size();
    if (a->prefilled < P) {
      size_t n = std::min<size_t>(P - a->prefilled, static_cast<size_t>(budget));
      if (n == 0) continue;  // the budget went to earlier prompts; next step
      // A chunk ends at the branch point, for its snapshot.
      const size_t branch = static_cast<size_t>(a->branch_at);
      if (branch > a->prefilled && branch < a->prefilled + n) n = branch - a->prefilled;
      budget -= static_cast<int>(n);
      items.push_back({std::span<const int32_t>(a->req.prompt).subspan(a->prefilled, n),
                       static_cast<int32_t>(a->prefilled), a->cache.get(), true});
      prefill_len.push_back(n);
      any_prefill = true;
    } else {
      items.push_back({std::span<const int32_t>(&a->next, 1), a->cache->size(), a->cache.get(), true});
      prefill_len.push_back(0);
    }
    owners.push_back(a.get());
  }
  const auto t0 = Clock::now();
  auto out = model_.ForwardBatch(backend_, items, nullptr, &graphs_);
  const auto t1 = Clock::now();
  LogGraphRefusal();
  if (!out.ok()) {
    LogError("engine step failed: " + out.status().ToString());
    for (Active* a : owners) Finish(*a, "error: " + out.status().message());
    std::erase_if(active_, [](const auto& a) { return a->seq->finished(); });
    return;
  }
  if (!any_prefill && observer_) observer_->OnDecodeStep(static_cast<int64_t>(items.size()), Seconds(t0, t1));

  for (size_t i = 0; i < items.size(); ++i) {
    Active& a = *owners[i];
    const std::vector<float>& logits = (*out)[i];
    if (prefill_len[i] > 0) {
      a.ids.insert(a.ids.end(), items[i].ids.begin(), items[i].ids.end());
      a.prefilled += prefill_len[i];
      if (observer_) observer_->OnPromptTokens(static_cast<int64_t>(prefill_len[i]));
      if (a.prefilled == static_cast<size_t>(a.branch_at)) a.branch = SnapshotOf(a);
      if (a.prefilled < a.req.prompt.size()) continue;  // more prompt to go
      if (options_.prefix_reuse && !a.snapshot) {
        a.snapshot = SnapshotOf(a);
        if (a.snapshot) a.snapshot_logits = logits;
      }
      a.prefill_done = t1;
      a.stats.prefill_seconds = Seconds(a.arrival, t1);
    } else {
      a.ids.push_back(a.next);
      a.stats.decode_seconds += Seconds(t0, t1);
      ++a.stats.decode_steps;
    }
    Deliver(a, logits);
  }
  std::erase_if(active_, [](const auto& a) { return a->seq->finished(); });
}

void Engine::Deliver(Active& a, const std::vector<float>& logits) {
  const Sequence::Step step = a.seq->Accept(logits, a.cache->size() < a.cache->max_context());
  const auto now = Clock::now();
  if (step.token >= 0 && observer_) {
    if (!a.got_first) {
      observer_->OnFirstToken(Seconds(a.arrival, now));
    } else {
      observer_->OnToken(Seconds(a.last_token, now));
    }
  }
  a.got_first = true;
  a.last_token = now;
  RequestEvent ev;
  ev.token = step.token;
  ev.text = step.text;
  if (a.req.top_logprobs >= 0 && step.token >= 0) {
    ev.logprob = Logprobs(logits, step.token, a.req.top_logprobs);
  }
  a.handle->Push(std::move(ev));
  if (step.finished) {
    Finish(a, a.seq->result().finish_reason);
  } else {
    a.next = a.seq->next_token();
  }
}

}  // namespace g4
