// Metrics registry and text exposition: see metrics.h; names and buckets from vLLM's
// v1/metrics/loggers.py as summarised in server-api.md §10.
#include "server/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <utility>

namespace g4 {
namespace {

void Header(std::string* out, std::string_view name, std::string_view type,
            std::string_view help) {
  out->append("# HELP ").append(name).append(" ").append(help).append("\n");
  out->append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

void Sample(std::string* out, std::string_view name, const std::string& labels,
            const std::string& value) {
  out->append(name).append("{").append(labels).append("} ").append(value).append("\n");
}

// The `le` label as the Python client writes it: "0.001", "1.0", "2560.0", "+Inf".
std::string BucketBound(double bound) {
  std::string s = FormatMetricValue(bound);
  if (s.find_first_of(".eEI") == std::string::npos) s += ".0";
  return s;
}

void RenderHistogram(std::string* out, std::string_view name, std::string_view help,
                     const std::string& labels, const Histogram& histogram) {
  const Histogram::Snapshot snap = histogram.Take();
  Header(out, name, "histogram", help);
  const std::string bucket = std::string(name) + "_bucket";
  for (size_t i = 0; i <= snap.bounds.size(); ++i) {
    const std::string le = i < snap.bounds.size() ? BucketBound(snap.bounds[i]) : "+Inf";
    Sample(out, bucket, labels + ",le=\"" + le + "\"",
           FormatMetricValue(static_cast<double>(snap.cumulative[i])));
  }
  Sample(out, std::string(name) + "_sum", labels, FormatMetricValue(snap.sum));
  Sample(out, std::string(name) + "_count", labels,
         FormatMetricValue(static_cast<double>(snap.count)));
}

void AddCounter(std::atomic<uint64_t>* counter, int64_t n) {
  if (n > 0) counter->fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
}

}  // namespace

const char* FinishedReasonName(FinishedReason reason) {
  switch (reason) {
    case FinishedReason::kStop: return "stop";
    case FinishedReason::kLength: return "length";
    case FinishedReason::kAbort: return "abort";
    case FinishedReason::kError: return "error";
  }
  return "error";
}

std::string EscapeLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string FormatMetricValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (value == std::floor(value) && std::fabs(value) < 1e15) {
    return std::to_string(static_cast<int64_t>(value));
  }
  char buf[64];
  const auto result = std::to_chars(buf, buf + sizeof(buf), value);
  return std::string(buf, result.ptr);
}

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::Observe(double value) {
  if (std::isnan(value)) return;  // would poison _sum forever
  // First bound >= value: Prometheus buckets are "less than or equal".
  const size_t bucket =
      std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  std::lock_guard<std::mutex> lock(mu_);
  ++counts_[bucket];
  sum_ += value;
}

Histogram::Snapshot Histogram::Take() const {
  Snapshot snap;
  snap.bounds = bounds_;
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t running = 0;
  snap.cumulative.reserve(counts_.size());
  for (uint64_t c : counts_) {
    running += c;
    snap.cumulative.push_back(running);
  }
  snap.count = running;
  snap.sum = sum_;
  return snap;
}

const std::vector<double>& Metrics::TimeToFirstTokenBuckets() {
  static const std::vector<double> kBuckets = {
      0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
      1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
  return kBuckets;
}

const std::vector<double>& Metrics::InterTokenLatencyBuckets() {
  static const std::vector<double> kBuckets = {0.01, 0.025, 0.05, 0.075, 0.1,  0.15, 0.2,
                                               0.3,  0.4,   0.5,  0.75,  1.0,  2.5,  5.0,
                                               7.5,  10.0,  20.0, 40.0,  80.0};
  return kBuckets;
}

const std::vector<double>& Metrics::E2eLatencyBuckets() {
  static const std::vector<double> kBuckets = {0.3,  0.5,  0.8,   1.0,   1.5,   2.0,   2.5,
                                               5.0,  10.0, 15.0,  20.0,  30.0,  40.0,  50.0,
                                               60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
  return kBuckets;
}

Metrics::Metrics(std::string model_name)
    : labels_("model_name=\"" + EscapeLabelValue(model_name) + "\""),
      ttft_(TimeToFirstTokenBuckets()),
      itl_(InterTokenLatencyBuckets()),
      e2e_(E2eLatencyBuckets()) {
  for (auto& s : success_) s.store(0, std::memory_order_relaxed);
}

void Metrics::AddPromptTokens(int64_t n) { AddCounter(&prompt_tokens_, n); }
void Metrics::AddGenerationTokens(int64_t n) { AddCounter(&generation_tokens_, n); }
void Metrics::AddPrefixCacheLookup(int64_t queried, int64_t hit) {
  AddCounter(&prefix_queries_, queried);
  AddCounter(&prefix_hits_, hit);
}
void Metrics::AddDegenerateResponse() { degenerate_.fetch_add(1, std::memory_order_relaxed); }

void Metrics::AddRequestSuccess(FinishedReason reason) {
  success_[static_cast<int>(reason)].fetch_add(1, std::memory_order_relaxed);
}

std::string Metrics::Render() const {
  std::string out;
  out.reserve(8192);
  const auto gauge = [&](std::string_view name, std::string_view help, double value) {
    Header(&out, name, "gauge", help);
    Sample(&out, name, labels_, FormatMetricValue(value));
  };
  const auto counter = [&](std::string_view name, std::string_view help, uint64_t value) {
    Header(&out, name, "counter", help);
    Sample(&out, name, labels_, FormatMetricValue(static_cast<double>(value)));
  };
  const auto load = [](const auto& atomic) { return atomic.load(std::memory_order_relaxed); };

  gauge("vllm:num_requests_running", "Number of requests in the running batch.",
        static_cast<double>(load(running_)));
  gauge("vllm:num_requests_waiting", "Number of requests waiting to be scheduled.",
        static_cast<double>(load(waiting_)));
  gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.",
        load(kv_usage_));
  gauge("g4:kv_cache_blocks_in_use",
        "KV-cache blocks (of the full-attention layers) held by running requests.",
        static_cast<double>(load(kv_blocks_)));
  gauge("g4:kv_cache_bytes_in_use", "KV-cache bytes (rings and blocks) held by running requests.",
        static_cast<double>(load(kv_bytes_)));
  gauge("g4:decode_tokens_per_second",
        "Decode steps per second over decode time alone (prefill excluded).", load(decode_rate_));

  counter("vllm:prompt_tokens_total", "Number of prefill tokens processed.",
          load(prompt_tokens_));
  counter("vllm:generation_tokens_total", "Number of generation tokens processed.",
          load(generation_tokens_));
  counter("vllm:prefix_cache_queries_total",
          "Prefix cache queries, in terms of number of queried tokens.", load(prefix_queries_));
  counter("vllm:prefix_cache_hits_total",
          "Prefix cache hits, in terms of number of cached tokens.", load(prefix_hits_));
  // Every label value is written from the start (as vLLM does), so rate() works from zero.
  Header(&out, "vllm:request_success_total", "counter",
         "Count of successfully processed requests.");
  for (int r = 0; r < kNumFinishedReasons; ++r) {
    Sample(&out, "vllm:request_success_total",
           labels_ + ",finished_reason=\"" +
               FinishedReasonName(static_cast<FinishedReason>(r)) + "\"",
           FormatMetricValue(static_cast<double>(load(success_[r]))));
  }
  Header(&out, "g4:decode_steps_total", "counter",
         "Decode steps by how they ran: a CUDA graph replayed or recorded, or op by op.");
  const std::pair<const char*, int64_t> modes[] = {{"graph_replayed", load(graph_replayed_)},
                                                   {"graph_recorded", load(graph_recorded_)},
                                                   {"op_by_op", load(op_by_op_)}};
  for (const auto& [mode, n] : modes) {
    Sample(&out, "g4:decode_steps_total", labels_ + ",mode=\"" + mode + "\"",
           FormatMetricValue(static_cast<double>(std::max<int64_t>(n, 0))));
  }
  counter("g4:degenerate_responses_total",
          "Responses whose generated tokens fell into a loop (the degeneracy check tripped).",
          load(degenerate_));

  RenderHistogram(&out, "vllm:time_to_first_token_seconds",
                  "Histogram of time to first token in seconds.", labels_, ttft_);
  RenderHistogram(&out, "vllm:inter_token_latency_seconds",
                  "Histogram of inter-token latency in seconds.", labels_, itl_);
  RenderHistogram(&out, "vllm:e2e_request_latency_seconds",
                  "Histogram of e2e request latency in seconds.", labels_, e2e_);
  return out;
}

}  // namespace g4
