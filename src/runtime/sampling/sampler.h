// Token sampling for generation: penalties, temperature, top-k, top-p, min-p, then a seeded
// draw. The semantics follow vLLM's sampler (which follows OpenAI and Hugging Face):
//
//   0. Logit bias (OpenAI): each listed token's bias in [-100, 100] is added to its logit,
//      before everything else, as in vLLM. -100 all but bans a token, +100 all but forces it.
//   1. Repetition penalty (HF/CTRL style) on every token id seen in prompt + output:
//        logit > 0 ? logit / p : logit * p.
//   2. Frequency and presence penalties (OpenAI) over the *output* tokens only:
//        logit -= frequency * count + presence * (count > 0).
//      vLLM counts output tokens only for these two (the prompt is the user's text, not the
//      model's habit); it uses prompt + output for the repetition penalty. g4 does the same,
//      which is why Sample() takes the prompt and the output as two spans.
//   3. Greedy (params.greedy, temperature < 1e-5 as in vLLM, or top_k == 1): argmax of the
//      penalised logits, the lowest id on ties. No random number is drawn.
//   4. Temperature: logits / T.
//   5. Top-k: keep exactly the k best tokens (ties at the cut broken by lower id, as in
//      llama.cpp; vLLM/HF keep every token tied with the k-th, which only differs on exact ties).
//   6. Top-p (nucleus) over the top-k distribution renormalised: keep the smallest
//      best-first prefix whose cumulative probability >= top_p; never fewer than one token.
//   7. Min-p: drop tokens with p < min_p * p_max (unaffected by renormalisation, so its order
//      with top-k/top-p does not matter).
//   8. Draw from the surviving tokens renormalised, with Xoshiro256** (rng.h).
//
// "Best first" is always logit descending, then id ascending, so every cut is deterministic
// and a seed replays the same tokens for the same logits.
//
// Cost for vocab V: a few O(V) passes, exp by a branch-free polynomial the compiler
// vectorises (vocab_math.h). Top-k selects with a bounded heap (one compare per token); top-p
// bins the mass into weight bands (8 per octave) to find the band holding the cut, then sorts
// only that band and the next. No step sorts the vocabulary, except top-p on a near-flat
// distribution where one band holds most of it. Buffers persist, so a step allocates nothing
// once the first has run. Measured at V = 262144 on one core: greedy ~0.15 ms, top-k ~0.3 ms,
// plain temperature ~0.5 ms, top-p ~0.8-1 ms.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "core/status.h"
#include "runtime/sampling/rng.h"

namespace g4 {

struct SamplingParams {
  float temperature = 1.0f;  // 0 (or < 1e-5) means greedy
  int top_k = 0;             // 0 = off
  float top_p = 1.0f;        // (0, 1]; 1 = off
  float min_p = 0.0f;        // [0, 1]; 0 = off
  float repetition_penalty = 1.0f;  // > 0; 1 = off; > 1 discourages repeats
  float presence_penalty = 0.0f;    // [-2, 2] as in OpenAI/vLLM; 0 = off
  float frequency_penalty = 0.0f;   // [-2, 2] as in OpenAI/vLLM; 0 = off
  std::optional<uint64_t> seed;     // set: reproducible; unset: seeded from random_device
  // (token id, bias in [-100, 100]) added to the logits first; ids past the vocabulary are
  // ignored (the server refuses them with the vocabulary at hand).
  std::vector<std::pair<int32_t, float>> logit_bias;
  bool greedy = false;

  // InvalidArgument naming the field and the allowed range when a value is out of range.
  Status Validate() const;
  // True when sampling reduces to argmax (greedy, temperature ~ 0, or top_k == 1).
  bool IsGreedy() const;
};

// One token of the final distribution: its id and renormalised probability.
struct TokenProb {
  int32_t id;
  float prob;
};

// One Sampler per sequence: it holds the RNG stream and scratch buffers (not thread-safe).
class Sampler {
 public:
  // `params` must pass Validate(); use Create() to have that checked. An invalid value that
  // slips through is clamped rather than crashing (top_k < 0 -> off, top_p out of range -> 1).
  explicit Sampler(const SamplingParams& params);
  static StatusOr<Sampler> Create(const SamplingParams& params);

  // Picks the next token from `logits` ([vocab]). `prompt` and `output` are the prompt ids and
  // the ids generated so far (see the header comment for which penalty reads which); ids
  // outside [0, vocab) are ignored. NaN logits count as -inf. Returns -1 only for empty logits;
  // if every logit is -inf the result is the argmax, token 0.
  int32_t Sample(std::span<const float> logits, std::span<const int32_t> prompt = {},
                 std::span<const int32_t> output = {});

  // The distribution Sample() draws from: surviving tokens, best first (lower id on ties),
  // probabilities summing to 1. Greedy gives one token with probability 1. Draws nothing.
  std::vector<TokenProb> Distribution(std::span<const float> logits,
                                      std::span<const int32_t> prompt = {},
                                      std::span<const int32_t> output = {});

  // Steps 0-2 alone, in place: exposed so tests and callers can see the penalised logits.
  void ApplyPenalties(std::span<float> logits, std::span<const int32_t> prompt,
                      std::span<const int32_t> output);

  const SamplingParams& params() const { return params_; }

 private:
  struct Candidate {
    float logit;   // penalised logit: the ranking key (weights can tie where logits do not)
    float weight;  // exp((logit - max) / T): probability up to the normaliser, in [0, 1]
    int32_t id;
  };
  // Best first, lower id on ties: a total order, so every cut is deterministic.
  static bool Better(const Candidate& a, const Candidate& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
  }

  // Fills work_ with the penalised, sanitised logits and returns the greedy token, or -1 when
  // sampling proper is needed; then Filter() has left the survivors in place (see dense_).
  int32_t Prepare(std::span<const float> logits, std::span<const int32_t> prompt,
                  std::span<const int32_t> output);
  void Filter(float max_logit);       // steps 4-7 over work_
  void SelectTopK(size_t k);          // the k best of work_ into candidates_ (logit, id)
  // Top-p over candidates_[0, count_), the first `sure` of which (holding `sure_mass`) are
  // known to be in the nucleus.
  void CutNucleus(double target, size_t sure, double sure_mass);

  SamplingParams params_;
  Xoshiro256 rng_;
  std::vector<float> work_;       // penalised logits, [vocab]
  std::vector<float> weights_;    // every token's weight, [vocab] (dense and top-p paths)
  std::vector<Candidate> candidates_;
  size_t count_ = 0;              // survivors: candidates_[0, count_), or all of weights_
  bool dense_ = false;            // no filter on: the survivors are every token, in weights_
  std::vector<double> histogram_; // top-p: mass per weight band (vocab_math::MassByBand)
  std::vector<uint32_t> counts_;  // per-id scratch for the penalties, all zero between calls
  std::vector<uint8_t> seen_;     // per-id scratch for the penalties, all zero between calls
};

}  // namespace g4
