#include "server/metrics_observer.h"

namespace g4 {

void MetricsObserver::OnFirstToken(double seconds) {
  m_->ObserveTimeToFirstToken(seconds);
  m_->AddGenerationTokens(1);
}

void MetricsObserver::OnToken(double seconds) {
  m_->ObserveInterTokenLatency(seconds);
  m_->AddGenerationTokens(1);
}

void MetricsObserver::OnFinished(const GenerationResult& r, double seconds) {
  FinishedReason reason = FinishedReason::kStop;
  if (r.finish_reason == "length") {
    reason = FinishedReason::kLength;
  } else if (r.finish_reason == "cancelled") {
    reason = FinishedReason::kAbort;
  } else if (r.finish_reason.rfind("error", 0) == 0) {
    reason = FinishedReason::kError;
  }
  m_->AddRequestSuccess(reason);
  m_->ObserveE2eLatency(seconds);
  if (r.degeneracy.degenerate) m_->AddDegenerateResponse();
}

void MetricsObserver::OnDecodeStep(int64_t tokens, double seconds) {
  if (seconds > 0) m_->SetDecodeTokensPerSecond(static_cast<double>(tokens) / seconds);
}

}  // namespace g4
