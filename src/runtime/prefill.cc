#include "runtime/prefill.h"

#include <algorithm>

namespace g4 {

StatusOr<std::vector<float>> Prefill(const CausalLM& model, Backend& backend,
                                     SequenceKvCache& cache, std::span<const int32_t> ids,
                                     int chunk, bool all_logits, const ProgressFn& progress) {
  const int64_t T = static_cast<int64_t>(ids.size());
  if (T == 0) return InvalidArgument("empty prompt: at least one token id is needed");
  if (chunk <= 0) return InvalidArgument("prefill chunk must be > 0");
  if (cache.size() + T > cache.max_context()) {
    return InvalidArgument("prompt of " + std::to_string(T) + " tokens (after " +
                           std::to_string(cache.size()) + " cached) does not fit the context of " +
                           std::to_string(cache.max_context()) + " tokens");
  }
  std::vector<float> out;
  for (int64_t start = 0; start < T; start += chunk) {
    const int64_t len = std::min<int64_t>(chunk, T - start);
    CausalLM::ForwardOptions opt;
    opt.start_pos = cache.size();
    opt.cache = &cache;
    opt.last_logits_only = !all_logits;
    G4_ASSIGN_OR_RETURN(std::vector<float> logits,
                        model.Forward(backend, ids.subspan(static_cast<size_t>(start),
                                                           static_cast<size_t>(len)), opt));
    if (all_logits) {
      out.insert(out.end(), logits.begin(), logits.end());
    } else if (start + len == T) {
      out = std::move(logits);
    }
    if (progress) progress(start + len, T);
  }
  return out;
}

}  // namespace g4
