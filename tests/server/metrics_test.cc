// Tests for the Prometheus registry: the exposition parses line by line (comments or
// `name{labels} value`), every vLLM name is present with model_name, counters and gauges read
// back, histogram buckets are cumulative and monotone with +Inf == _count, and concurrent
// updates lose nothing.
#include "server/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace g4 {
namespace {

using ::testing::HasSubstr;

struct SampleLine {
  std::string name;
  std::map<std::string, std::string> labels;
  double value;
};

struct Exposition {
  std::vector<SampleLine> samples;
  std::map<std::string, std::string> types;  // from # TYPE
  std::vector<std::string> errors;           // lines that parse as neither
};

double ParseValue(const std::string& s) {
  if (s == "+Inf") return INFINITY;
  if (s == "-Inf") return -INFINITY;
  if (s == "NaN") return NAN;
  size_t used = 0;
  const double v = std::stod(s, &used);
  if (used != s.size()) throw std::invalid_argument(s);
  return v;
}

// A strict reader of the 0.0.4 text format, enough for what Render() writes.
Exposition Parse(const std::string& text) {
  Exposition out;
  static const std::regex kComment(R"(^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.+)$)");
  // name, {labels} (group 3 inside the braces), value (group 4).
  static const std::regex kSample(std::string(R"(^([a-zA-Z_:][a-zA-Z0-9_:]*))") +
                                  R"((\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*",?)*)\})?)" +
                                  R"( (\S+)$)");
  static const std::regex kLabel(R"re(([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)")re");
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::smatch m;
    if (std::regex_match(line, m, kComment)) {
      if (m[1] == "TYPE") out.types[m[2]] = m[3];
      continue;
    }
    if (!std::regex_match(line, m, kSample)) {
      out.errors.push_back(line);
      continue;
    }
    SampleLine s;
    s.name = m[1];
    const std::string labels = m[3];
    for (std::sregex_iterator it(labels.begin(), labels.end(), kLabel), end; it != end; ++it) {
      s.labels[(*it)[1]] = (*it)[2];
    }
    try {
      s.value = ParseValue(m[4]);
    } catch (...) {
      out.errors.push_back(line);
      continue;
    }
    out.samples.push_back(std::move(s));
  }
  return out;
}

const SampleLine* Find(const Exposition& e, const std::string& name,
                       const std::map<std::string, std::string>& labels = {}) {
  for (const SampleLine& s : e.samples) {
    if (s.name != name) continue;
    bool match = true;
    for (const auto& [k, v] : labels) {
      const auto it = s.labels.find(k);
      match = match && it != s.labels.end() && it->second == v;
    }
    if (match) return &s;
  }
  return nullptr;
}

double Value(const Exposition& e, const std::string& name,
             const std::map<std::string, std::string>& labels = {}) {
  const SampleLine* s = Find(e, name, labels);
  EXPECT_NE(s, nullptr) << name;
  return s == nullptr ? NAN : s->value;
}

// Checks one histogram: cumulative, monotone, le ascending, +Inf == _count; returns _count.
double CheckHistogram(const Exposition& e, const std::string& name) {
  std::vector<std::pair<double, double>> buckets;  // (le, count)
  for (const SampleLine& s : e.samples) {
    if (s.name != name + "_bucket") continue;
    EXPECT_EQ(s.labels.count("model_name"), 1u);
    EXPECT_EQ(s.labels.count("le"), 1u);
    buckets.emplace_back(ParseValue(s.labels.at("le")), s.value);
  }
  EXPECT_GE(buckets.size(), 2u) << name;
  for (size_t i = 1; i < buckets.size(); ++i) {
    EXPECT_LT(buckets[i - 1].first, buckets[i].first) << name << ": le ascending";
    EXPECT_LE(buckets[i - 1].second, buckets[i].second) << name << ": cumulative";
  }
  EXPECT_TRUE(std::isinf(buckets.back().first)) << name << ": ends with +Inf";
  const double count = Value(e, name + "_count");
  EXPECT_EQ(buckets.back().second, count) << name << ": +Inf == _count";
  EXPECT_EQ(e.types.at(name), "histogram");
  return count;
}

TEST(MetricsTest, FreshRegistryExposesEveryNameWithTheModelLabel) {
  Metrics metrics("gemma-4-e2b");
  const std::string text = metrics.Render();
  const Exposition e = Parse(text);
  EXPECT_TRUE(e.errors.empty()) << "unparsable line: " << e.errors.front();
  const std::map<std::string, std::string> types = {
      {"vllm:num_requests_running", "gauge"},     {"vllm:num_requests_waiting", "gauge"},
      {"vllm:kv_cache_usage_perc", "gauge"},      {"g4:decode_tokens_per_second", "gauge"},
      {"g4:kv_cache_blocks_in_use", "gauge"},     {"g4:kv_cache_bytes_in_use", "gauge"},
      {"vllm:prompt_tokens_total", "counter"},    {"vllm:generation_tokens_total", "counter"},
      {"vllm:request_success_total", "counter"},  {"g4:degenerate_responses_total", "counter"},
      {"g4:decode_steps_total", "counter"},        {"vllm:prefix_cache_queries_total", "counter"},
      {"vllm:prefix_cache_hits_total", "counter"},
      {"vllm:time_to_first_token_seconds", "histogram"},
      {"vllm:inter_token_latency_seconds", "histogram"},
      {"vllm:e2e_request_latency_seconds", "histogram"},
  };
  for (const auto& [name, type] : types) {
    ASSERT_EQ(e.types.count(name), 1u) << name;
    EXPECT_EQ(e.types.at(name), type) << name;
    EXPECT_THAT(text, HasSubstr("# HELP " + name + " "));
  }
  for (const SampleLine& s : e.samples) {
    EXPECT_EQ(s.labels.at("model_name"), "gemma-4-e2b") << s.name;
  }
  for (const char* reason : {"stop", "length", "abort", "error"}) {
    EXPECT_EQ(Value(e, "vllm:request_success_total", {{"finished_reason", reason}}), 0) << reason;
  }
  EXPECT_EQ(CheckHistogram(e, "vllm:time_to_first_token_seconds"), 0);
  EXPECT_EQ(text.back(), '\n');
  EXPECT_EQ(Metrics::kContentType, "text/plain; version=0.0.4; charset=utf-8");
}

TEST(MetricsTest, CountersAndGaugesReadBack) {
  Metrics metrics("m");
  metrics.SetRequestsRunning(3);
  metrics.SetRequestsWaiting(7);
  metrics.SetKvCacheUsage(0.25);
  metrics.SetDecodeTokensPerSecond(123.5);
  metrics.SetKvBlocksInUse(12);
  metrics.SetKvBytesInUse(3 << 20);
  metrics.SetDecodeSteps(90, 4, 2);
  metrics.AddPromptTokens(100);
  metrics.AddPromptTokens(-5);  // ignored: counters never go down
  metrics.AddGenerationTokens(42);
  metrics.AddRequestSuccess(FinishedReason::kStop);
  metrics.AddRequestSuccess(FinishedReason::kStop);
  metrics.AddRequestSuccess(FinishedReason::kLength);
  metrics.AddRequestSuccess(FinishedReason::kAbort);
  metrics.AddDegenerateResponse();
  metrics.AddPrefixCacheLookup(40, 0);
  metrics.AddPrefixCacheLookup(40, 39);
  const Exposition e = Parse(metrics.Render());
  ASSERT_TRUE(e.errors.empty()) << e.errors.front();
  EXPECT_EQ(Value(e, "vllm:num_requests_running"), 3);
  EXPECT_EQ(Value(e, "vllm:num_requests_waiting"), 7);
  EXPECT_EQ(Value(e, "vllm:kv_cache_usage_perc"), 0.25);
  EXPECT_EQ(Value(e, "g4:decode_tokens_per_second"), 123.5);
  EXPECT_EQ(Value(e, "g4:kv_cache_blocks_in_use"), 12);
  EXPECT_EQ(Value(e, "g4:kv_cache_bytes_in_use"), 3 << 20);
  EXPECT_EQ(Value(e, "vllm:prompt_tokens_total"), 100);
  EXPECT_EQ(Value(e, "vllm:generation_tokens_total"), 42);
  EXPECT_EQ(Value(e, "vllm:request_success_total", {{"finished_reason", "stop"}}), 2);
  EXPECT_EQ(Value(e, "vllm:request_success_total", {{"finished_reason", "length"}}), 1);
  EXPECT_EQ(Value(e, "vllm:request_success_total", {{"finished_reason", "abort"}}), 1);
  EXPECT_EQ(Value(e, "g4:degenerate_responses_total"), 1);
  EXPECT_EQ(Value(e, "g4:decode_steps_total", {{"mode", "graph_replayed"}}), 90);
  EXPECT_EQ(Value(e, "g4:decode_steps_total", {{"mode", "graph_recorded"}}), 4);
  EXPECT_EQ(Value(e, "g4:decode_steps_total", {{"mode", "op_by_op"}}), 2);
  EXPECT_EQ(Value(e, "vllm:prefix_cache_queries_total"), 80);
  EXPECT_EQ(Value(e, "vllm:prefix_cache_hits_total"), 39);
}

TEST(MetricsTest, HistogramBucketsAreVllmsAndCumulative) {
  Metrics metrics("m");
  for (double v : {0.0005, 0.001, 0.003, 0.3, 0.3, 5000.0}) metrics.ObserveTimeToFirstToken(v);
  metrics.ObserveInterTokenLatency(0.02);
  metrics.ObserveE2eLatency(0.3);  // exactly on a bound: counted in that bucket (le is <=)
  metrics.ObserveE2eLatency(NAN);  // dropped
  const Exposition e = Parse(metrics.Render());
  ASSERT_TRUE(e.errors.empty()) << e.errors.front();
  const std::string ttft = "vllm:time_to_first_token_seconds";
  EXPECT_EQ(CheckHistogram(e, ttft), 6);
  EXPECT_EQ(Value(e, ttft + "_bucket", {{"le", "0.001"}}), 2);
  EXPECT_EQ(Value(e, ttft + "_bucket", {{"le", "0.005"}}), 3);
  EXPECT_EQ(Value(e, ttft + "_bucket", {{"le", "0.25"}}), 3);
  EXPECT_EQ(Value(e, ttft + "_bucket", {{"le", "0.5"}}), 5);
  EXPECT_EQ(Value(e, ttft + "_bucket", {{"le", "2560.0"}}), 5);
  EXPECT_EQ(Value(e, ttft + "_bucket", {{"le", "+Inf"}}), 6);
  EXPECT_NEAR(Value(e, ttft + "_sum"), 0.0005 + 0.001 + 0.003 + 0.6 + 5000.0, 1e-9);
  EXPECT_EQ(CheckHistogram(e, "vllm:inter_token_latency_seconds"), 1);
  EXPECT_EQ(CheckHistogram(e, "vllm:e2e_request_latency_seconds"), 1);
  EXPECT_EQ(Value(e, "vllm:e2e_request_latency_seconds_bucket", {{"le", "0.3"}}), 1);
  EXPECT_EQ(Value(e, "vllm:e2e_request_latency_seconds_bucket", {{"le", "7680.0"}}), 1);
  // vLLM's bucket lists, end to end.
  EXPECT_EQ(Metrics::TimeToFirstTokenBuckets().size(), 22u);
  EXPECT_EQ(Metrics::TimeToFirstTokenBuckets().back(), 2560.0);
  EXPECT_EQ(Metrics::InterTokenLatencyBuckets().size(), 19u);
  EXPECT_EQ(Metrics::InterTokenLatencyBuckets().front(), 0.01);
  EXPECT_EQ(Metrics::E2eLatencyBuckets().size(), 21u);
  EXPECT_EQ(Metrics::E2eLatencyBuckets().back(), 7680.0);
}

TEST(MetricsTest, ModelNameIsEscaped) {
  Metrics metrics("odd \"name\"\\with\nnewline");
  const std::string text = metrics.Render();
  EXPECT_THAT(text, HasSubstr(R"(model_name="odd \"name\"\\with\nnewline")"));
  const Exposition e = Parse(text);
  EXPECT_TRUE(e.errors.empty()) << e.errors.front();
}

TEST(MetricsTest, ValueFormatting) {
  EXPECT_EQ(FormatMetricValue(0), "0");
  EXPECT_EQ(FormatMetricValue(42), "42");
  EXPECT_EQ(FormatMetricValue(0.25), "0.25");
  EXPECT_EQ(FormatMetricValue(INFINITY), "+Inf");
  EXPECT_EQ(FormatMetricValue(-INFINITY), "-Inf");
  EXPECT_EQ(FormatMetricValue(NAN), "NaN");
  EXPECT_EQ(ParseValue(FormatMetricValue(0.1 + 0.2)), 0.1 + 0.2) << "round-trips";
}

TEST(MetricsTest, ConcurrentUpdatesLoseNothing) {
  Metrics metrics("m");
  constexpr int kThreads = 8, kIterations = 5000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&metrics, t] {
      for (int i = 0; i < kIterations; ++i) {
        metrics.AddGenerationTokens(1);
        metrics.AddPromptTokens(2);
        metrics.AddRequestSuccess(static_cast<FinishedReason>(i % kNumFinishedReasons));
        metrics.ObserveInterTokenLatency(0.001 * (i % 100));
        metrics.SetRequestsRunning(t);
      }
    });
  }
  // Render while the writers run: every snapshot must still be self-consistent.
  for (int i = 0; i < 20; ++i) {
    const Exposition e = Parse(metrics.Render());
    ASSERT_TRUE(e.errors.empty());
    CheckHistogram(e, "vllm:inter_token_latency_seconds");
  }
  for (auto& t : threads) t.join();
  const Exposition e = Parse(metrics.Render());
  EXPECT_EQ(Value(e, "vllm:generation_tokens_total"), kThreads * kIterations);
  EXPECT_EQ(Value(e, "vllm:prompt_tokens_total"), 2 * kThreads * kIterations);
  EXPECT_EQ(CheckHistogram(e, "vllm:inter_token_latency_seconds"), kThreads * kIterations);
  double successes = 0;
  for (const char* reason : {"stop", "length", "abort", "error"}) {
    successes += Value(e, "vllm:request_success_total", {{"finished_reason", reason}});
  }
  EXPECT_EQ(successes, kThreads * kIterations);
}

}  // namespace
}  // namespace g4
