// MetricsObserver: feeds the engine's per-token and per-request events into the Prometheus
// registry (vLLM's counters and histograms, g4's decode gauge and degeneracy counter).
#pragma once

#include "runtime/scheduler/engine.h"
#include "server/metrics.h"

namespace g4 {

class MetricsObserver : public EngineObserver {
 public:
  explicit MetricsObserver(Metrics* metrics) : m_(metrics) {}

  void OnPromptTokens(int64_t n) override { m_->AddPromptTokens(n); }
  void OnFirstToken(double seconds) override;
  void OnToken(double seconds) override;
  void OnFinished(const GenerationResult& result, double seconds) override;
  void OnDecodeStep(int64_t tokens, double seconds) override;
  void OnPrefixLookup(int64_t prompt_tokens, int64_t cached_tokens) override {
    m_->AddPrefixCacheLookup(prompt_tokens, cached_tokens);
  }

 private:
  Metrics* m_;
};

}  // namespace g4
