// Perplexity with llama.cpp's llama-perplexity protocol, so g4's numbers compare with llama.cpp's:
// the text's tokens (BOS first when the model adds one) are cut into n = T / ctx chunks of ctx
// tokens (the tail is dropped); each chunk is a fresh sequence whose first token is replaced by
// BOS (when bos >= 0); only the second half is scored: for j in [ctx / 2, ctx - 1), the NLL of
// token j + 1 under the logits at j. PPL = exp(sum NLL / count) over all chunks so far.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "core/status.h"
#include "model/causal_lm.h"
#include "ops/backend.h"

namespace g4 {

struct PerplexityOptions {
  int ctx = 512;          // tokens per chunk (>= 2)
  int max_chunks = 0;     // 0: every whole chunk
  int32_t bos = -1;       // replaces each chunk's first token; -1: keep the text's token
  int batch = 128;        // tokens per forward pass within a chunk (bounds the logits' memory)
  // When set, every chunk also runs on this backend (same model and batches, its own KV cache),
  // and the scored positions are compared, as llama-perplexity's --kl-divergence does: the
  // baseline's perplexity, KL(baseline || backend) and how often both pick the same top token.
  // How a kernel choice (e.g. MatVec::kQ8 against kExact) costs accuracy on real text.
  Backend* baseline = nullptr;
};

struct PerplexityResult {
  int chunks = 0;
  int64_t scored = 0;     // tokens whose NLL counts
  double nll_sum = 0;
  std::vector<double> running_ppl;  // after each chunk, as llama-perplexity prints them
  double ppl() const;
  // With a baseline: its NLL sum, the sum of KL(baseline || backend) over scored positions (nats),
  // the largest one, and the positions whose argmax agrees.
  double baseline_nll_sum = 0;
  double kl_sum = 0, kl_max = 0;
  int64_t top1_same = 0;
  double baseline_ppl() const;
};

// Called after each chunk with (chunks done, chunks total, running perplexity).
using PerplexityProgress = std::function<void(int, int, double)>;

// InvalidArgument when the text has fewer than one chunk of tokens or ctx < 2 or ctx exceeds the
// model's context.
StatusOr<PerplexityResult> Perplexity(const CausalLM& model, Backend& backend,
                                      std::span<const int32_t> tokens,
                                      const PerplexityOptions& options,
                                      const PerplexityProgress& progress = {});

}  // namespace g4
