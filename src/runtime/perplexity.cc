#include "runtime/perplexity.h"

#include <algorithm>
#include <cmath>

#include "runtime/kv_cache/kv_cache.h"

namespace g4 {
namespace {

// -log softmax(logits)[target], in f64.
double Nll(const float* logits, int64_t V, int32_t target) {
  const float max = *std::max_element(logits, logits + V);
  double sum = 0;
  for (int64_t i = 0; i < V; ++i) sum += std::exp(static_cast<double>(logits[i]) - max);
  return std::log(sum) + max - logits[target];
}

// KL(p || q) of the softmaxes of logits p and q, in f64 nats.
double Kl(const float* p, const float* q, int64_t V) {
  const double pm = *std::max_element(p, p + V), qm = *std::max_element(q, q + V);
  double ps = 0, qs = 0;
  for (int64_t i = 0; i < V; ++i) {
    ps += std::exp(p[i] - pm);
    qs += std::exp(q[i] - qm);
  }
  const double plog = std::log(ps) + pm, qlog = std::log(qs) + qm;  // log-partition functions
  double kl = 0;
  for (int64_t i = 0; i < V; ++i) {
    const double lp = p[i] - plog, lq = q[i] - qlog;
    kl += std::exp(lp) * (lp - lq);
  }
  return std::max(0.0, kl);
}

// The logits of ids[start, start + len) of a chunk, continuing `cache`.
StatusOr<std::vector<float>> ChunkLogits(const CausalLM& model, Backend& backend,
                                         const std::vector<int32_t>& ids, int64_t start,
                                         int64_t len, SequenceKvCache* cache) {
  CausalLM::ForwardOptions fo;
  fo.start_pos = static_cast<int32_t>(start);
  fo.cache = cache;
  return model.Forward(backend, std::span<const int32_t>(ids).subspan(start, len), fo);
}

}  // namespace

double PerplexityResult::ppl() const {
  return scored > 0 ? std::exp(nll_sum / static_cast<double>(scored)) : 0.0;
}

double PerplexityResult::baseline_ppl() const {
  return scored > 0 ? std::exp(baseline_nll_sum / static_cast<double>(scored)) : 0.0;
}

StatusOr<PerplexityResult> Perplexity(const CausalLM& model, Backend& backend,
                                      std::span<const int32_t> tokens,
                                      const PerplexityOptions& o,
                                      const PerplexityProgress& progress) {
  const ModelInfo& info = model.info();
  const int64_t n_ctx = o.ctx;
  if (n_ctx < 2 || n_ctx > info.max_context) {
    return InvalidArgument("perplexity context " + std::to_string(n_ctx) + " must be in [2, " +
                           std::to_string(info.max_context) + "]");
  }
  int chunks = static_cast<int>(static_cast<int64_t>(tokens.size()) / n_ctx);
  if (o.max_chunks > 0) chunks = std::min(chunks, o.max_chunks);
  if (chunks == 0) {
    return InvalidArgument("the text has " + std::to_string(tokens.size()) +
                           " tokens: fewer than one chunk of " + std::to_string(n_ctx));
  }
  const int64_t V = info.vocab_size, first = n_ctx / 2;
  const int64_t batch = std::max(1, o.batch);
  PerplexityResult r;
  for (int c = 0; c < chunks; ++c) {
    std::vector<int32_t> ids(tokens.begin() + c * n_ctx, tokens.begin() + (c + 1) * n_ctx);
    if (o.bos >= 0) ids[0] = o.bos;
    G4_ASSIGN_OR_RETURN(std::unique_ptr<SequenceKvCache> cache,
                        SequenceKvCache::Create(info.layers, static_cast<int>(n_ctx),
                                                backend.memory(), backend.kv_dtype()));
    std::unique_ptr<SequenceKvCache> base_cache;
    if (o.baseline != nullptr) {
      G4_ASSIGN_OR_RETURN(base_cache,
                          SequenceKvCache::Create(info.layers, static_cast<int>(n_ctx),
                                                  o.baseline->memory(), o.baseline->kv_dtype()));
    }
    for (int64_t start = 0; start < n_ctx; start += batch) {
      const int64_t len = std::min(batch, n_ctx - start);
      G4_ASSIGN_OR_RETURN(const std::vector<float> logits,
                          ChunkLogits(model, backend, ids, start, len, cache.get()));
      std::vector<float> base;
      if (o.baseline != nullptr) {
        G4_ASSIGN_OR_RETURN(base,
                            ChunkLogits(model, *o.baseline, ids, start, len, base_cache.get()));
      }
      for (int64_t j = std::max(start, first); j < std::min(start + len, n_ctx - 1); ++j) {
        const float* l = logits.data() + (j - start) * V;
        r.nll_sum += Nll(l, V, ids[j + 1]);
        ++r.scored;
        if (o.baseline == nullptr) continue;
        const float* b = base.data() + (j - start) * V;
        r.baseline_nll_sum += Nll(b, V, ids[j + 1]);
        const double kl = Kl(b, l, V);
        r.kl_sum += kl;
        r.kl_max = std::max(r.kl_max, kl);
        r.top1_same += std::max_element(b, b + V) - b == std::max_element(l, l + V) - l ? 1 : 0;
      }
    }
    ++r.chunks;
    r.running_ppl.push_back(r.ppl());
    if (progress) progress(r.chunks, chunks, r.ppl());
  }
  return r;
}

}  // namespace g4
