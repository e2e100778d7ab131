// Metrics: the server's Prometheus registry, exposed by GET /metrics in the text exposition
// format 0.0.4. Names, types and histogram buckets are vLLM's (server-api.md §10) because
// dashboards and autoscalers key on them; g4 adds its own under the "g4:" prefix. Every
// series carries model_name="<served name>".
//
// Thread-safe: counters and gauges are atomics (the engine thread updates them every step
// without a lock); each histogram has its own mutex, taken once per observation and once per
// Render().
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace g4 {

// vllm:request_success_total's finished_reason label values.
enum class FinishedReason { kStop, kLength, kAbort, kError };
inline constexpr int kNumFinishedReasons = 4;
const char* FinishedReasonName(FinishedReason reason);

// A histogram with fixed upper bounds; Observe() counts a value in the first bucket whose
// bound is >= the value (the +Inf bucket past the last).
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void Observe(double value);

  struct Snapshot {
    std::vector<double> bounds;
    std::vector<uint64_t> cumulative;  // per bound, then +Inf (== count)
    double sum = 0;
    uint64_t count = 0;
  };
  Snapshot Take() const;

 private:
  const std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::vector<uint64_t> counts_;  // per bucket, not cumulative; the last is +Inf
  double sum_ = 0;
};

class Metrics {
 public:
  explicit Metrics(std::string model_name);

  // Gauges.
  void SetRequestsRunning(int64_t n) { running_.store(n, std::memory_order_relaxed); }
  void SetRequestsWaiting(int64_t n) { waiting_.store(n, std::memory_order_relaxed); }
  void SetKvCacheUsage(double fraction) { kv_usage_.store(fraction, std::memory_order_relaxed); }
  // KV memory the running sequences have allocated: blocks of the full-attention layers and
  // bytes (rings + blocks). Both return to 0 when no request runs, so a leak shows here.
  void SetKvBlocksInUse(int64_t n) { kv_blocks_.store(n, std::memory_order_relaxed); }
  void SetKvBytesInUse(int64_t n) { kv_bytes_.store(n, std::memory_order_relaxed); }
  // Decode steps per second over decode time alone (prefill excluded).
  void SetDecodeTokensPerSecond(double rate) {
    decode_rate_.store(rate, std::memory_order_relaxed);
  }

  // Decode steps so far by how they ran (the engine's running totals, warm-up included): a CUDA
  // graph replayed, recorded then launched, or op by op (every step without graphs).
  void SetDecodeSteps(int64_t replayed, int64_t recorded, int64_t op_by_op) {
    graph_replayed_.store(replayed, std::memory_order_relaxed);
    graph_recorded_.store(recorded, std::memory_order_relaxed);
    op_by_op_.store(op_by_op, std::memory_order_relaxed);
  }

  // Counters (negative increments are ignored: a counter never goes down).
  void AddPromptTokens(int64_t n);
  void AddGenerationTokens(int64_t n);
  // Prefix reuse (vLLM's prefix-cache counters): prompt tokens looked up, and those a kept cache
  // already held.
  void AddPrefixCacheLookup(int64_t queried, int64_t hit);
  void AddRequestSuccess(FinishedReason reason);
  void AddDegenerateResponse();

  // Histograms, in seconds.
  void ObserveTimeToFirstToken(double seconds) { ttft_.Observe(seconds); }
  void ObserveInterTokenLatency(double seconds) { itl_.Observe(seconds); }
  void ObserveE2eLatency(double seconds) { e2e_.Observe(seconds); }

  // The text exposition (# HELP, # TYPE, samples; histograms as cumulative _bucket{le=...}
  // including +Inf, then _sum and _count).
  std::string Render() const;
  // The Content-Type to serve Render() with.
  static constexpr std::string_view kContentType = "text/plain; version=0.0.4; charset=utf-8";

  // vLLM's bucket bounds.
  static const std::vector<double>& TimeToFirstTokenBuckets();
  static const std::vector<double>& InterTokenLatencyBuckets();
  static const std::vector<double>& E2eLatencyBuckets();

 private:
  std::string labels_;  // model_name="..." (escaped)
  std::atomic<int64_t> running_{0}, waiting_{0}, kv_blocks_{0}, kv_bytes_{0};
  std::atomic<int64_t> graph_replayed_{0}, graph_recorded_{0}, op_by_op_{0};
  std::atomic<double> kv_usage_{0}, decode_rate_{0};
  std::atomic<uint64_t> prompt_tokens_{0}, generation_tokens_{0}, degenerate_{0};
  std::atomic<uint64_t> prefix_queries_{0}, prefix_hits_{0};
  std::array<std::atomic<uint64_t>, kNumFinishedReasons> success_{};
  Histogram ttft_, itl_, e2e_;
};

// A label value escaped for the text format (backslash, double quote and newline).
std::string EscapeLabelValue(std::string_view value);
// A sample value as Prometheus prints it: integers plainly, +Inf/-Inf/NaN spelled out,
// other values in the shortest form that round-trips.
std::string FormatMetricValue(double value);

}  // namespace g4
