// The continuous-batching engine: concurrent requests get exactly the output they get alone,
// cancellation frees the slot within a step, a full queue is refused, shutdown ends everything.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <thread>
#include <tuple>

#include "common/temp_path.h"
#include "model/registry.h"
#include "runtime/generator.h"
#include "runtime/scheduler/engine.h"
#include "synthetic/gemma4.h"

namespace g4 {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::unique_ptr<CausalLM> TinyModel() {
  const fs::path dir = testing::ProcessTempPath("g4_engine_tiny");
  if (!fs::exists(dir / "config.json")) {
    SyntheticOptions o;
    o.preset = "tiny";
    o.dtype = DType::kBF16;
    o.seed = 9;
    if (!WriteSyntheticCheckpoint(o, dir.string()).ok()) return nullptr;
  }
  auto m = LoadCausalLM(dir.string());
  return m.ok() ? std::move(*m) : nullptr;
}

std::vector<int32_t> Prompt(int n, int salt) {
  std::vector<int32_t> ids = {2};
  for (int i = 1; i < n; ++i) ids.push_back((i * 37 + salt * 101) % 512);
  return ids;
}

GenerationOptions Greedy(int max_tokens) {
  GenerationOptions o;
  o.max_tokens = max_tokens;
  o.sampling.greedy = true;
  return o;
}

// A greedy request for Prompt(n, salt) that may generate `max_tokens`.
EngineRequest Request(int n, int salt, int max_tokens) {
  EngineRequest req;
  req.prompt = Prompt(n, salt);
  req.options = Greedy(max_tokens);
  return req;
}

// Engine options with `max_batch` running slots and `ctx_size` positions; the rest default.
EngineOptions Options(int max_batch, int ctx_size) {
  EngineOptions eo;
  eo.max_batch = max_batch;
  eo.ctx_size = ctx_size;
  return eo;
}

// Every test runs the tiny synthetic model on the CPU backend.
class EngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = TinyModel();
    ASSERT_NE(model_, nullptr);
  }

  std::unique_ptr<CausalLM> model_;
  Backend backend_{BackendKind::kCpu, 0};
};

// Drains a handle: the finished event's result (fails the test on a 30 s stall).
GenerationResult Wait(RequestHandle& h, int* token_events = nullptr) {
  RequestEvent ev;
  int n = 0;
  while (h.Next(&ev, 30s)) {
    if (ev.kind == RequestEvent::Kind::kFinished) {
      if (token_events) *token_events = n;
      return ev.result;
    }
    n += ev.token >= 0;
  }
  ADD_FAILURE() << "no finished event";
  return {};
}

TEST_F(EngineTest, ConcurrentGreedyOutputsEqualSoloOutputs) {
  Backend solo_backend(BackendKind::kCpu, 1);
  std::vector<std::vector<int32_t>> expected;
  for (int s = 0; s < 8; ++s) {
    auto r = Generate(*model_, solo_backend, Prompt(3 + 5 * s, s), Greedy(12));
    ASSERT_TRUE(r.ok());
    expected.push_back(r->tokens);
  }
  EngineOptions eo = Options(4, 128);  // 8 requests: half wait, then join as others finish
  eo.prefill_budget = 9;
  Engine engine(*model_, backend_, nullptr, eo);
  engine.Start();
  std::vector<std::shared_ptr<RequestHandle>> handles;
  for (int s = 0; s < 8; ++s) {
    auto h = engine.Submit(Request(3 + 5 * s, s, 12));
    ASSERT_TRUE(h.ok()) << h.status().ToString();
    handles.push_back(*h);
  }
  for (int s = 0; s < 8; ++s) {
    int events = 0;
    const GenerationResult r = Wait(*handles[s], &events);
    EXPECT_EQ(r.tokens, expected[s]) << "request " << s;
    EXPECT_EQ(r.finish_reason, "length");
    EXPECT_EQ(events, 12);
  }
  EXPECT_EQ(engine.Stats().running, 0);
  engine.Shutdown(1s);
}

TEST_F(EngineTest, CancelFreesTheSlotWithinAStep) {
  EngineOptions eo = Options(1, 512);
  Engine engine(*model_, backend_, nullptr, eo);
  engine.Start();
  EngineRequest req = Request(10, 1, 400);
  auto h = engine.Submit(req);
  ASSERT_TRUE(h.ok());
  RequestEvent ev;
  ASSERT_TRUE((*h)->Next(&ev, 30s));  // the first token arrived: it is running
  EXPECT_EQ(engine.Stats().running, 1);
  (*h)->Cancel();
  const GenerationResult r = Wait(**h);
  EXPECT_EQ(r.finish_reason, "cancelled");
  EXPECT_LT(r.tokens.size(), 400u);
  EXPECT_EQ(engine.Stats().running, 0);
  EXPECT_EQ(engine.Stats().kv_cache_usage, 0.0);
  // The slot is free: a new request runs to completion.
  req.options = Greedy(3);
  auto h2 = engine.Submit(req);
  ASSERT_TRUE(h2.ok());
  EXPECT_EQ(Wait(**h2).tokens.size(), 3u);
  engine.Shutdown(1s);
}

TEST_F(EngineTest, CancelledQueuedRequestIsDroppedWithoutRunning) {
  EngineOptions eo = Options(1, 512);
  eo.max_waiting = 1;
  Engine engine(*model_, backend_, nullptr, eo);
  engine.Start();
  EngineRequest req = Request(10, 1, 400);
  auto running = engine.Submit(req);
  ASSERT_TRUE(running.ok());
  RequestEvent ev;
  ASSERT_TRUE((*running)->Next(&ev, 30s));  // the only slot is taken
  auto queued = engine.Submit(req);
  ASSERT_TRUE(queued.ok());
  EXPECT_EQ(engine.Stats().waiting, 1);
  (*queued)->Cancel();  // a client that left while waiting
  const GenerationResult r = Wait(**queued);
  EXPECT_EQ(r.finish_reason, "cancelled");
  EXPECT_TRUE(r.tokens.empty());  // it never ran
  EXPECT_EQ(engine.Stats().waiting, 0);
  EXPECT_EQ(engine.Stats().running, 1);  // the running one is untouched
  EXPECT_TRUE(engine.Submit(req).ok());  // and its place in the queue is free again
  engine.Shutdown(0ms);
}

// Draining: Shutdown lets the running and queued requests finish and returns as soon as the
// last one has, not at the end of its grace (a replica would hold its load balancer that long).
TEST_F(EngineTest, ShutdownReturnsWhenTheLastRequestFinishes) {
  EngineOptions eo = Options(1, 512);
  Engine engine(*model_, backend_, nullptr, eo);
  engine.Start();
  auto running = engine.Submit(Request(10, 1, 12));
  auto queued = engine.Submit(Request(10, 2, 12));
  ASSERT_TRUE(running.ok() && queued.ok());
  RequestEvent ev;
  ASSERT_TRUE((*running)->Next(&ev, 30s));
  const auto t0 = std::chrono::steady_clock::now();
  engine.Shutdown(60s);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 20s);
  EXPECT_EQ(Wait(**running).finish_reason, "length");
  EXPECT_EQ(Wait(**queued).finish_reason, "length");  // accepted before the signal: it ran
  EXPECT_FALSE(engine.Submit(Request(10, 3, 2)).ok());  // nothing new after
}

// Without graphs (the CPU backend) every decode step runs op by op, and the stats count each:
// the warm-up's one full-batch step, then one per generated token after the first.
TEST_F(EngineTest, DecodeStepsAreCountedByHowTheyRan) {
  Engine engine(*model_, backend_, nullptr, Options(2, 128));
  ASSERT_TRUE(engine.Warmup().ok());
  const StepGraphs::Stats warm = engine.Stats().decode_steps;
  EXPECT_EQ(warm.op_by_op, 1);
  EXPECT_EQ(warm.recorded + warm.replayed, 0);
  auto h = engine.Submit(Request(7, 1, 6));
  ASSERT_TRUE(h.ok());
  engine.Start();
  EXPECT_EQ(Wait(**h).tokens.size(), 6u);
  engine.Shutdown(0ms);
  const StepGraphs::Stats served = engine.Stats().decode_steps;
  EXPECT_EQ(served.op_by_op, 1 + 5);  // the first token comes from the prefill step
  EXPECT_EQ(served.recorded + served.replayed, 0);
}

TEST_F(EngineTest, KvBlocksInUseFollowRunningSequences) {
  EngineOptions eo = Options(2, 512);
  Engine engine(*model_, backend_, nullptr, eo);
  engine.Start();
  EXPECT_EQ(engine.Stats().kv_blocks_in_use, 0);
  EngineRequest req = Request(20, 3, 400);
  auto a = engine.Submit(req);
  auto b = engine.Submit(req);
  ASSERT_TRUE(a.ok() && b.ok());
  RequestEvent ev;
  ASSERT_TRUE((*a)->Next(&ev, 30s));
  ASSERT_TRUE((*b)->Next(&ev, 30s));
  // Both have run a step; the stats are refreshed right after it.
  EngineStats st;
  for (int i = 0; i < 100; ++i) {
    st = engine.Stats();
    if (st.kv_blocks_in_use >= 2) break;
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_GE(st.kv_blocks_in_use, 2);  // at least one block per sequence (tiny has full layers)
  EXPECT_GT(st.kv_bytes_in_use, 0);
  (*a)->Cancel();
  Wait(**a);
  const EngineStats one = engine.Stats();  // freed before the finished event was sent
  EXPECT_LT(one.kv_blocks_in_use, st.kv_blocks_in_use + 2);
  EXPECT_GT(one.kv_blocks_in_use, 0);
  (*b)->Cancel();
  Wait(**b);
  EXPECT_EQ(engine.Stats().kv_blocks_in_use, 0);
  EXPECT_EQ(engine.Stats().kv_bytes_in_use, 0);
  engine.Shutdown(0ms);
}

TEST_F(EngineTest, FullQueueAndBadRequestsAreRefused) {
  EngineOptions eo = Options(1, 64);
  eo.max_waiting = 2;
  Engine engine(*model_, backend_, nullptr, eo);  // not started: nothing leaves the queue
  EngineRequest req = Request(5, 0, 4);
  ASSERT_TRUE(engine.Submit(req).ok());
  ASSERT_TRUE(engine.Submit(req).ok());
  auto third = engine.Submit(req);
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(third.status().message(), ::testing::HasSubstr("queue is full"));

  req.prompt = Prompt(64, 0);
  auto too_long = engine.Submit(req);
  ASSERT_FALSE(too_long.ok());
  EXPECT_EQ(too_long.status().code(), StatusCode::kInvalidArgument);
  req.prompt = {2, 9999};
  EXPECT_FALSE(engine.Submit(req).ok());
  req.prompt = Prompt(5, 0);
  req.options.stop_strings = {"x"};  // no tokenizer: stop strings cannot be matched
  EXPECT_FALSE(engine.Submit(req).ok());
}

// --kv-memory: a request starts when its cache reservation (prompt + max_tokens positions)
// fits beside the running ones, whatever the free slots; it waits otherwise, and starts as soon
// as a running one frees its bytes.
TEST_F(EngineTest, KvMemoryAdmitsWhatFitsAndQueuesTheRest) {
  // a and b must still run 50 ms after they start: 8000 tokens past any EOS (400 took ~40 ms
  // on a 2-core Zen 4 VM, so the third started when the first finished).
  EngineOptions eo = Options(4, 8192);
  EngineRequest req = Request(10, 1, 8000);
  req.options.ignore_eos = true;
  {
    Engine probe(*model_, backend_, nullptr, eo);
    eo.kv_memory = 2 * probe.KvBytesFor(8010) + probe.KvBytesFor(8010) / 2;  // room for two
  }
  Engine engine(*model_, backend_, nullptr, eo);
  EXPECT_EQ(engine.Stats().kv_budget_bytes, eo.kv_memory);
  engine.Start();
  auto a = engine.Submit(req), b = engine.Submit(req), c = engine.Submit(req);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  RequestEvent ev;
  ASSERT_TRUE((*a)->Next(&ev, 30s));  // a and b are running
  ASSERT_TRUE((*b)->Next(&ev, 30s));
  EXPECT_FALSE((*c)->Next(&ev, 50ms)) << "the third started beyond the KV memory";
  EngineStats st = engine.Stats();
  EXPECT_EQ(st.running, 2);
  EXPECT_EQ(st.waiting, 1);
  EXPECT_LE(st.kv_cache_usage, 1.0);
  EXPECT_GT(st.kv_cache_usage, 0.75);
  (*a)->Cancel();
  Wait(**a);
  ASSERT_TRUE((*c)->Next(&ev, 30s));  // a's bytes are free: c runs
  EXPECT_GE(ev.token, 0);
  (*b)->Cancel();
  (*c)->Cancel();
  Wait(**b);
  Wait(**c);
  engine.Shutdown(0ms);
}

TEST_F(EngineTest, RequestLargerThanTheKvMemoryIsRefusedWithWhatItNeeds) {
  EngineOptions eo = Options(2, 512);
  eo.kv_memory = 1000;
  Engine engine(*model_, backend_, nullptr, eo);
  const size_t need = engine.KvBytesFor(10 + 400);
  ASSERT_GT(need, 1000u);
  auto r = engine.Submit(Request(10, 1, 400));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(),
              ::testing::HasSubstr("needs " + std::to_string(need) + " bytes of KV cache (410 "
                                   "positions"));
  EXPECT_THAT(r.status().message(), ::testing::HasSubstr("KV memory is 1000 bytes"));
  // Without max_tokens' room it would still need the prompt's positions: also refused.
  EXPECT_FALSE(engine.Submit(Request(10, 1, 1)).ok());
}

// The sliding window of the tiny model's rings.
int Window(const CausalLM& m) {
  int w = 0;
  for (const KvLayout& l : m.info().layers) w = std::max(w, l.window);
  return w;
}

// One request at a time through `engine`: the result (and its cached prompt tokens).
GenerationResult RunOne(Engine& engine, const std::vector<int32_t>& prompt, int max_tokens) {
  EngineRequest req;
  req.prompt = prompt;
  req.options = Greedy(max_tokens);
  auto h = engine.Submit(req);
  EXPECT_TRUE(h.ok()) << h.status().ToString();
  return h.ok() ? Wait(**h) : GenerationResult{};
}

// Prefix reuse: the same prompt again (from the snapshot at its end, no forward pass for the
// first token) and the next turn of a chat (the previous prompt + answer + new tokens,
// continuing the kept cache in place) give exactly the greedy tokens a fresh cache gives, at
// prompt lengths around the sliding window, in prefill chunks of 3 and 64.
TEST_F(EngineTest, PrefixReuseGivesTheTokensAFreshCacheGives) {
  const int W = Window(*model_);
  ASSERT_GT(W, 0);
  for (int budget : {3, 64}) {
    for (int T : {W - 1, W, W + 1, 2 * W + 3}) {
      SCOPED_TRACE("T=" + std::to_string(T) + " budget=" + std::to_string(budget));
      EngineOptions eo = Options(2, 1024);  // room for kept caches of one 256-position block
      eo.prefill_budget = budget;
      eo.prefix_reuse = false;
      Engine fresh(*model_, backend_, nullptr, eo);
      eo.prefix_reuse = true;
      Engine reuse(*model_, backend_, nullptr, eo);
      fresh.Start();
      reuse.Start();
      const std::vector<int32_t> p1 = Prompt(T, T);
      const GenerationResult f1 = RunOne(fresh, p1, 6), r1 = RunOne(reuse, p1, 6);
      EXPECT_EQ(r1.tokens, f1.tokens);
      EXPECT_EQ(r1.stats.cached_tokens, 0);
      const GenerationResult r1b = RunOne(reuse, p1, 6);  // the same prompt again
      EXPECT_EQ(r1b.tokens, f1.tokens);
      EXPECT_EQ(r1b.stats.cached_tokens, T);
      // The next turn: the prompt, the answer, then W + 2 new tokens (past the window).
      std::vector<int32_t> p2 = p1;
      p2.insert(p2.end(), f1.tokens.begin(), f1.tokens.end());
      for (int i = 0; i < W + 2; ++i) p2.push_back((i * 53 + 7) % 500 + 3);
      const GenerationResult f2 = RunOne(fresh, p2, 6), r2 = RunOne(reuse, p2, 6);
      EXPECT_EQ(r2.tokens, f2.tokens);
      // The kept cache held the prompt and the answer but its last token (never run).
      EXPECT_EQ(r2.stats.cached_tokens, T + static_cast<int>(f1.tokens.size()) - 1);
      // A prompt sharing only part of p1 with the kept caches (rings: no snapshot there) runs
      // fresh, and still right.
      std::vector<int32_t> p3(p1.begin(), p1.begin() + T / 2 + 1);
      p3.push_back(499);
      const GenerationResult f3 = RunOne(fresh, p3, 6), r3 = RunOne(reuse, p3, 6);
      EXPECT_EQ(r3.tokens, f3.tokens);
      fresh.Shutdown(0ms);
      reuse.Shutdown(0ms);
    }
  }
}

// Cached and fresh sequences in one batch; two chat sessions taking turns keep both their
// caches within the KV memory; under pressure the kept caches go first and outputs stay right.
TEST_F(EngineTest, PrefixReuseInABatchAlternatingSessionsAndEviction) {
  // A kept cache holds whole blocks of 256 positions: a context of 1024 leaves room for both.
  EngineOptions eo = Options(2, 1024);
  eo.prefix_reuse = false;
  Engine fresh(*model_, backend_, nullptr, eo);
  fresh.Start();
  const std::vector<int32_t> a = Prompt(30, 1), b = Prompt(30, 2);
  const GenerationResult fa = RunOne(fresh, a, 5), fb = RunOne(fresh, b, 5);

  eo.prefix_reuse = true;
  Engine engine(*model_, backend_, nullptr, eo);
  engine.Start();
  RunOne(engine, a, 5);
  // a again (cached) and b (fresh) in one batch.
  EngineRequest ra, rb;
  ra.prompt = a;
  ra.options = Greedy(5);
  rb.prompt = b;
  rb.options = Greedy(5);
  auto ha = engine.Submit(ra), hb = engine.Submit(rb);
  ASSERT_TRUE(ha.ok() && hb.ok());
  const GenerationResult ga = Wait(**ha), gb = Wait(**hb);
  EXPECT_EQ(ga.tokens, fa.tokens);
  EXPECT_EQ(gb.tokens, fb.tokens);
  EXPECT_EQ(ga.stats.cached_tokens, 30);
  EXPECT_EQ(gb.stats.cached_tokens, 0);
  // Alternating: each session's next prompt finds its own cache.
  for (int turn = 0; turn < 3; ++turn) {
    EXPECT_EQ(RunOne(engine, a, 5).stats.cached_tokens, 30) << "turn " << turn;
    EXPECT_EQ(RunOne(engine, b, 5).stats.cached_tokens, 30) << "turn " << turn;
  }
  EXPECT_EQ(engine.Stats().retained_caches, 2);
  engine.Shutdown(0ms);

  // Room for one running request and nothing kept beside it: every kept cache is evicted.
  const size_t one = engine.KvBytesFor(35);
  eo.kv_memory = one + one / 4;
  Engine tight(*model_, backend_, nullptr, eo);
  tight.Start();
  EXPECT_EQ(RunOne(tight, a, 5).tokens, fa.tokens);
  EXPECT_EQ(RunOne(tight, b, 5).tokens, fb.tokens);
  const GenerationResult again = RunOne(tight, a, 5);
  EXPECT_EQ(again.tokens, fa.tokens);
  EXPECT_LE(tight.Stats().retained_bytes, eo.kv_memory);
  tight.Shutdown(0ms);
  fresh.Shutdown(0ms);
}

// A prompt branching part way into a kept cache gets a copy put back to the shared prefix (the
// tiny model's rings, window 8, have not wrapped there) and the kept cache stays for the next
// branch: branches running together and the same prompt twice at once all reuse it. Once the
// rings have wrapped, a branch before the kept snapshot has no state to resume and runs fresh,
// keeping a snapshot where it left, which the next prompt leaving there resumes from, also after
// that sequence's next turn has taken its cache over.
TEST_F(EngineTest, PrefixReuseBranchesFromAKeptCacheThatStays) {
  ASSERT_EQ(Window(*model_), 8);
  EngineOptions eo = Options(2, 1024);  // room for a few kept caches of one 256-position block
  eo.prefix_reuse = false;
  Engine fresh(*model_, backend_, nullptr, eo);
  eo.prefix_reuse = true;
  Engine engine(*model_, backend_, nullptr, eo);
  fresh.Start();
  engine.Start();
  const std::vector<int32_t> base = Prompt(4, 3);
  auto branch = [&](int32_t a, int32_t b) {
    std::vector<int32_t> p(base.begin(), base.begin() + 3);
    p.push_back(a);
    p.push_back(b);
    return p;
  };
  EXPECT_EQ(RunOne(engine, base, 3).stats.cached_tokens, 0);  // kept: 4 + 2 positions
  const std::vector<int32_t> b1 = branch(7, 9);
  const GenerationResult r1 = RunOne(engine, b1, 4);
  EXPECT_EQ(r1.tokens, RunOne(fresh, b1, 4).tokens);
  EXPECT_EQ(r1.stats.cached_tokens, 3);
  EXPECT_EQ(engine.Stats().retained_caches, 2);  // base's stayed beside b1's
  // Two branches in one batch, then the same prompt twice in one batch.
  for (const auto& [p, q, cached] :
       {std::tuple{branch(11, 13), branch(17, 19), 3}, std::tuple{base, base, 4}}) {
    EngineRequest ra, rb;
    ra.prompt = p;
    rb.prompt = q;
    ra.options = rb.options = Greedy(4);
    auto ha = engine.Submit(ra), hb = engine.Submit(rb);
    ASSERT_TRUE(ha.ok() && hb.ok());
    const GenerationResult ga = Wait(**ha), gb = Wait(**hb);
    EXPECT_EQ(ga.tokens, RunOne(fresh, p, 4).tokens);
    EXPECT_EQ(gb.tokens, RunOne(fresh, q, 4).tokens);
    EXPECT_EQ(ga.stats.cached_tokens, cached);
    EXPECT_EQ(gb.stats.cached_tokens, cached);
  }
  engine.Shutdown(0ms);

  Engine wrapped(*model_, backend_, nullptr, eo);
  wrapped.Start();
  const std::vector<int32_t> longer = Prompt(12, 5);
  RunOne(wrapped, longer, 3);  // kept: 14 positions, snapshot at 12
  std::vector<int32_t> b4(longer.begin(), longer.begin() + 6);
  b4.push_back(21);
  const GenerationResult r4 = RunOne(wrapped, b4, 4);
  EXPECT_EQ(r4.tokens, RunOne(fresh, b4, 4).tokens);
  EXPECT_EQ(r4.stats.cached_tokens, 0);
  // b4 kept a snapshot where it left `longer` (6): the next prompt leaving there resumes.
  std::vector<int32_t> b5(longer.begin(), longer.begin() + 6);
  b5.insert(b5.end(), {23, 25});
  const GenerationResult r5 = RunOne(wrapped, b5, 4);
  EXPECT_EQ(r5.tokens, RunOne(fresh, b5, 4).tokens);
  EXPECT_EQ(r5.stats.cached_tokens, 6);
  // b4's next turn takes its kept cache over, and the snapshot at 6 goes with it: a third
  // prompt leaving `longer` there still resumes.
  std::vector<int32_t> b4next = b4;
  b4next.insert(b4next.end(), r4.tokens.begin(), r4.tokens.end());
  b4next.insert(b4next.end(), {27, 29});
  const GenerationResult r4next = RunOne(wrapped, b4next, 3);
  EXPECT_EQ(r4next.tokens, RunOne(fresh, b4next, 3).tokens);
  EXPECT_EQ(r4next.stats.cached_tokens, static_cast<int>(b4.size() + r4.tokens.size()) - 1);
  std::vector<int32_t> b6(longer.begin(), longer.begin() + 6);
  b6.insert(b6.end(), {31, 33});
  const GenerationResult r6 = RunOne(wrapped, b6, 4);
  EXPECT_EQ(r6.tokens, RunOne(fresh, b6, 4).tokens);
  EXPECT_EQ(r6.stats.cached_tokens, 6);
  wrapped.Shutdown(0ms);
  fresh.Shutdown(0ms);
}

// Branches of one kept cache hold its whole blocks instead of copies, and admission counts those
// once, in the kept cache's bytes: two long branches run together beside it within a budget
// smaller than two full reservations.
TEST_F(EngineTest, BranchesOfAKeptCacheAreAdmittedOnWhatTheyAdd) {
  EngineOptions eo = Options(4, 8192);
  const std::vector<int32_t> base = Prompt(600, 7);  // kept with its snapshot at 600
  EngineRequest reqs[2];
  for (int i = 0; i < 2; ++i) {
    reqs[i].prompt = base;
    reqs[i].prompt.push_back(11 + i);
    reqs[i].options = Greedy(7000);  // still running when the other starts (see above)
    reqs[i].options.ignore_eos = true;
  }
  {
    Engine probe(*model_, backend_, nullptr, eo);
    probe.Start();
    RunOne(probe, base, 2);
    const size_t need = probe.KvBytesFor(601 + 7000);
    const size_t shared = 2 * (probe.KvBytesFor(512) - probe.KvBytesFor(256));  // blocks 0, 1
    eo.kv_memory = probe.Stats().retained_bytes + 2 * (need - shared) + shared / 4;
    ASSERT_LT(eo.kv_memory, 2 * need);
    probe.Shutdown(0ms);
  }
  Engine engine(*model_, backend_, nullptr, eo);
  engine.Start();
  RunOne(engine, base, 2);
  auto x = engine.Submit(reqs[0]), y = engine.Submit(reqs[1]);
  ASSERT_TRUE(x.ok() && y.ok());
  RequestEvent ev;
  ASSERT_TRUE((*x)->Next(&ev, 30s));
  ASSERT_TRUE((*y)->Next(&ev, 30s));
  const EngineStats st = engine.Stats();
  EXPECT_EQ(st.running, 2) << "the second branch waited for the first";
  EXPECT_EQ(st.retained_caches, 1);
  EXPECT_LE(st.kv_cache_usage * static_cast<double>(eo.kv_memory) +
                static_cast<double>(st.retained_bytes),
            static_cast<double>(eo.kv_memory));
  (*x)->Cancel();
  (*y)->Cancel();
  EXPECT_EQ(Wait(**x).stats.cached_tokens, 600);
  EXPECT_EQ(Wait(**y).stats.cached_tokens, 600);
  engine.Shutdown(0ms);
}

TEST_F(EngineTest, ShutdownEndsQueuedAndRunningRequests) {
  EngineOptions eo = Options(1, 4096);
  Engine engine(*model_, backend_, nullptr, eo);
  ASSERT_TRUE(engine.Warmup().ok());
  engine.Start();
  EngineRequest req = Request(5, 0, 4000);
  auto running = engine.Submit(req);
  auto queued = engine.Submit(req);
  ASSERT_TRUE(running.ok() && queued.ok());
  std::this_thread::sleep_for(50ms);
  engine.Shutdown(0ms);
  EXPECT_EQ(Wait(**running).finish_reason, "cancelled");
  EXPECT_EQ(Wait(**queued).finish_reason, "cancelled");
  EXPECT_FALSE(engine.Submit(req).ok());  // no longer accepting
}

}  // namespace
}  // namespace g4
