// A request to the continuous-batching engine and the handle its submitter reads events from.
// The engine thread only pushes events and reads the cancel flag; it never blocks on a client.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "runtime/generator.h"

namespace g4 {

struct EngineRequest {
  std::vector<int32_t> prompt;
  GenerationOptions options;      // options.max_context is ignored: the engine sizes the cache
  bool skip_special_tokens = true;
  int top_logprobs = -1;          // -1: no logprobs; 0..20: the sampled token's + that many more
};

struct TokenLogprob {
  int32_t token = -1;
  float logprob = 0.0f;
  std::vector<std::pair<int32_t, float>> top;  // best first
};

struct RequestEvent {
  enum class Kind { kToken, kFinished };
  Kind kind = Kind::kToken;
  // kToken: the sampled id (-1 for text released without a token) and the text now safe to
  // emit; logprob when requested.
  int32_t token = -1;
  std::string text;
  TokenLogprob logprob;
  // kFinished: the whole result (ids, text, finish_reason, degeneracy, stats).
  GenerationResult result;
};

class RequestHandle {
 public:
  // Waits up to `timeout` for the next event; false if none came.
  bool Next(RequestEvent* event, std::chrono::milliseconds timeout);
  // Asks the engine to drop the request; it is freed within one engine step and a kFinished
  // event with finish_reason "cancelled" follows.
  void Cancel() { cancelled_.store(true); }
  bool cancelled() const { return cancelled_.load(); }

  // Engine side.
  void Push(RequestEvent event);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<RequestEvent> events_;
  std::atomic<bool> cancelled_{false};
};

}  // namespace g4
