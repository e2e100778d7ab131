// Sampler: see sampler.h for the pipeline and the vLLM/OpenAI semantics it follows.
#include "runtime/sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>

#include "runtime/sampling/vocab_math.h"

namespace g4 {

using vocab_math::FastExp;

namespace {

// vLLM's _SAMPLING_EPS: below this a temperature is treated as greedy, which also keeps
// (logit - max) / T from overflowing.
constexpr float kGreedyTemperature = 1e-5f;
// First chunk of the doubling partial sort used by top-p; typical nuclei are smaller.
constexpr size_t kFirstSortChunk = 64;

Status OutOfRange(const char* field, const std::string& range, double value) {
  return InvalidArgument("SamplingParams." + std::string(field) + " must be " + range + ", got " +
                         std::to_string(value));
}

uint64_t RandomSeed() {
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) ^ device();
}

}  // namespace

Status SamplingParams::Validate() const {
  if (!(temperature >= 0.0f) || !std::isfinite(temperature)) {
    return OutOfRange("temperature", ">= 0 and finite (0 means greedy)", temperature);
  }
  if (top_k < 0) return OutOfRange("top_k", ">= 0 (0 disables top-k)", top_k);
  if (!(top_p > 0.0f && top_p <= 1.0f)) {
    return OutOfRange("top_p", "in (0, 1] (1 disables top-p)", top_p);
  }
  if (!(min_p >= 0.0f && min_p <= 1.0f)) {
    return OutOfRange("min_p", "in [0, 1] (0 disables min-p)", min_p);
  }
  if (!(repetition_penalty > 0.0f) || !std::isfinite(repetition_penalty)) {
    return OutOfRange("repetition_penalty", "> 0 and finite (1 disables it)", repetition_penalty);
  }
  if (!(presence_penalty >= -2.0f && presence_penalty <= 2.0f)) {
    return OutOfRange("presence_penalty", "in [-2, 2] (0 disables it)", presence_penalty);
  }
  if (!(frequency_penalty >= -2.0f && frequency_penalty <= 2.0f)) {
    return OutOfRange("frequency_penalty", "in [-2, 2] (0 disables it)", frequency_penalty);
  }
  for (const auto& [id, bias] : logit_bias) {
    if (id < 0) return OutOfRange("logit_bias", "keyed by token ids >= 0", id);
    if (!(bias >= -100.0f && bias <= 100.0f)) {
      return OutOfRange("logit_bias", "in [-100, 100] for every token", bias);
    }
  }
  return Status::Ok();
}

bool SamplingParams::IsGreedy() const {
  return greedy || temperature < kGreedyTemperature || top_k == 1;
}

Sampler::Sampler(const SamplingParams& params)
    : params_(params), rng_(params.seed.has_value() ? *params.seed : RandomSeed()) {
  // Clamp what Validate() would reject, so a bad value cannot reach the math below.
  if (params_.top_k < 0) params_.top_k = 0;
  if (!(params_.top_p > 0.0f && params_.top_p <= 1.0f)) params_.top_p = 1.0f;
  if (!(params_.min_p >= 0.0f && params_.min_p <= 1.0f)) params_.min_p = 0.0f;
  if (!(params_.repetition_penalty > 0.0f) || !std::isfinite(params_.repetition_penalty)) {
    params_.repetition_penalty = 1.0f;
  }
  if (!std::isfinite(params_.presence_penalty)) params_.presence_penalty = 0.0f;
  if (!std::isfinite(params_.frequency_penalty)) params_.frequency_penalty = 0.0f;
  if (!(params_.temperature >= 0.0f) || !std::isfinite(params_.temperature)) {
    params_.temperature = 0.0f;
  }
  for (auto& [id, bias] : params_.logit_bias) {
    bias = std::isfinite(bias) ? std::clamp(bias, -100.0f, 100.0f) : 0.0f;
  }
}

StatusOr<Sampler> Sampler::Create(const SamplingParams& params) {
  G4_RETURN_IF_ERROR(params.Validate());
  return Sampler(params);
}

void Sampler::ApplyPenalties(std::span<float> logits, std::span<const int32_t> prompt,
                             std::span<const int32_t> output) {
  const size_t vocab = logits.size();
  auto in_vocab = [vocab](int32_t id) { return id >= 0 && static_cast<size_t>(id) < vocab; };
  for (const auto& [id, bias] : params_.logit_bias) {
    if (in_vocab(id)) logits[id] += bias;  // a grammar's -inf stays -inf
  }

  const float rep = params_.repetition_penalty;
  if (rep != 1.0f) {
    // Each distinct id once: seen_ marks the ids already penalised, then is cleared by
    // walking the same ids (O(context), not O(vocab)).
    if (seen_.size() < vocab) seen_.resize(vocab, 0);
    for (std::span<const int32_t> ids : {prompt, output}) {
      for (int32_t id : ids) {
        if (!in_vocab(id) || seen_[id]) continue;
        seen_[id] = 1;
        float& l = logits[id];
        l = l > 0.0f ? l / rep : l * rep;
      }
    }
    for (std::span<const int32_t> ids : {prompt, output}) {
      for (int32_t id : ids) {
        if (in_vocab(id)) seen_[id] = 0;
      }
    }
  }

  const float presence = params_.presence_penalty;
  const float frequency = params_.frequency_penalty;
  if (presence != 0.0f || frequency != 0.0f) {
    if (counts_.size() < vocab) counts_.resize(vocab, 0);
    for (int32_t id : output) {
      if (in_vocab(id)) ++counts_[id];
    }
    // The first visit of an id applies its total and zeroes the count, so later visits of
    // the same id see 0 and skip: each id is penalised once and counts_ ends all zero.
    for (int32_t id : output) {
      if (!in_vocab(id) || counts_[id] == 0) continue;
      logits[id] -= frequency * static_cast<float>(counts_[id]) + presence;
      counts_[id] = 0;
    }
  }
}

int32_t Sampler::Prepare(std::span<const float> logits, std::span<const int32_t> prompt,
                         std::span<const int32_t> output) {
  work_.assign(logits.begin(), logits.end());
  ApplyPenalties(work_, prompt, output);
  const float max_logit = vocab_math::SanitizeAndMax(work_.data(), work_.size());
  constexpr float kInf = std::numeric_limits<float>::infinity();
  if (params_.IsGreedy() || max_logit == -kInf) {
    // The lowest id holding the max; all -inf gives 0.
    return static_cast<int32_t>(std::find(work_.begin(), work_.end(), max_logit) - work_.begin());
  }
  Filter(max_logit);
  return -1;
}

void Sampler::Filter(float max_logit) {
  const size_t vocab = work_.size();
  const float inv_t = 1.0f / params_.temperature;
  const size_t k = params_.top_k > 0 && static_cast<size_t>(params_.top_k) < vocab
                       ? static_cast<size_t>(params_.top_k)
                       : 0;
  const bool use_top_p = params_.top_p < 1.0f;
  const float min_p = params_.min_p;
  candidates_.clear();
  dense_ = false;

  if (k == 0 && !use_top_p && min_p == 0.0f) {
    // Plain temperature sampling: every token survives; keep the weights dense.
    weights_.resize(vocab);
    vocab_math::ExpWeights(work_.data(), vocab, max_logit, inv_t, weights_.data());
    dense_ = true;
    count_ = vocab;
    return;
  }

  double target = 0.0;  // top-p: the mass the nucleus must reach
  if (k > 0) {
    SelectTopK(k);
    double total = 0.0;
    for (Candidate& c : candidates_) {
      c.weight = FastExp((c.logit - max_logit) * inv_t);
      total += c.weight;
    }
    target = params_.top_p * total;  // top-p measures the top-k distribution (vLLM order)
    if (min_p > 0.0f) {
      // weight is p / p_max, so min-p's rule p >= min_p * p_max is weight >= min_p.
      candidates_.erase(std::partition(candidates_.begin(), candidates_.end(),
                                       [min_p](const Candidate& c) { return c.weight >= min_p; }),
                        candidates_.end());
    }
  } else if (!use_top_p) {
    // Min-p alone: a cheap test on z first (with slack for rounding), the exact one after.
    const float z_cut = std::log(min_p) - 1e-3f;
    for (size_t i = 0; i < vocab; ++i) {
      const float z = (work_[i] - max_logit) * inv_t;
      if (z < z_cut) continue;
      const float w = FastExp(z);
      if (w >= min_p) candidates_.push_back({work_[i], w, static_cast<int32_t>(i)});
    }
  } else {
    // Top-p over the whole vocabulary. The mass per weight band tells, in one pass, which
    // band b the cut falls in. Bands above b are in the nucleus whole, unsorted; only bands
    // b and b + 1 (slack for rounding) are sorted to place the exact cut.
    weights_.resize(vocab);
    vocab_math::ExpWeights(work_.data(), vocab, max_logit, inv_t, weights_.data());
    histogram_.resize(vocab_math::kMassByBandScratch);
    vocab_math::MassByBand(weights_.data(), vocab, histogram_.data());
    double total = 0.0;
    for (int b = 0; b < vocab_math::kWeightBands; ++b) total += histogram_[b];
    target = params_.top_p * total;
    constexpr int kLastPositiveBand = vocab_math::kWeightBands - 2;
    int cut_band = kLastPositiveBand;
    double mass = 0.0;
    for (int b = 0; b < kLastPositiveBand; ++b) {
      mass += histogram_[b];
      if (mass >= target) {
        cut_band = b;
        break;
      }
    }
    // w > floor excludes weight 0; w >= min_p applies min-p (0 when off).
    const float floor = vocab_math::BandFloor(std::min(cut_band + 1, kLastPositiveBand));
    for (size_t i = 0; i < vocab; ++i) {
      const float w = weights_[i];
      if (w > floor && w >= min_p) candidates_.push_back({work_[i], w, static_cast<int32_t>(i)});
    }
    count_ = candidates_.size();
    size_t sure = 0;
    double sure_mass = 0.0;
    if (cut_band > 0) {
      const float sure_floor = vocab_math::BandFloor(cut_band - 1);
      sure = std::partition(candidates_.begin(), candidates_.end(),
                            [sure_floor](const Candidate& c) { return c.weight > sure_floor; }) -
             candidates_.begin();
      for (size_t i = 0; i < sure; ++i) sure_mass += candidates_[i].weight;
      // Rounding put the cut inside the sure bands after all: cut among every candidate.
      if (sure_mass >= target) sure = 0, sure_mass = 0.0;
    }
    CutNucleus(target, sure, sure_mass);
    return;
  }
  count_ = candidates_.size();
  // Min-p keeps a best-first prefix of the top-k set, so the nucleus is cut inside it.
  if (use_top_p) CutNucleus(target, 0, 0.0);
}

void Sampler::SelectTopK(size_t k) {
  const size_t vocab = work_.size();
  if (k * 16 > vocab) {
    // A large k: a linear-time selection over every token beats the heap.
    for (size_t i = 0; i < vocab; ++i) {
      candidates_.push_back({work_[i], 0.0f, static_cast<int32_t>(i)});
    }
    std::nth_element(candidates_.begin(), candidates_.begin() + k, candidates_.end(),
                     [](const Candidate& a, const Candidate& b) { return Better(a, b); });
    candidates_.resize(k);
    return;
  }
  // A heap of the k best so far, its worst on top: one compare per token, and a token enters
  // only when it beats that worst (rarely, after the first few thousand). Ties never enter:
  // the earlier, lower id is already the better of equals.
  auto better = [](const Candidate& a, const Candidate& b) { return Better(a, b); };
  for (size_t i = 0; i < k; ++i) candidates_.push_back({work_[i], 0.0f, static_cast<int32_t>(i)});
  std::make_heap(candidates_.begin(), candidates_.end(), better);
  for (size_t i = k; i < vocab; ++i) {
    if (work_[i] > candidates_.front().logit) {
      std::pop_heap(candidates_.begin(), candidates_.end(), better);
      candidates_.back() = {work_[i], 0.0f, static_cast<int32_t>(i)};
      std::push_heap(candidates_.begin(), candidates_.end(), better);
    }
  }
}

void Sampler::CutNucleus(double target, size_t sure, double sure_mass) {
  // Sort best-first in doubling chunks (each chunk selected by nth_element from the unsorted
  // rest) until the running mass reaches the target; never fewer than one token.
  auto better = [](const Candidate& a, const Candidate& b) { return Better(a, b); };
  const auto begin = candidates_.begin();
  const size_t n = count_;
  size_t sorted = sure;
  size_t chunk = kFirstSortChunk;
  double mass = sure_mass;
  for (; sorted < n; chunk *= 2) {
    const size_t next = std::min(n, sorted + chunk);
    if (next < n) std::nth_element(begin + sorted, begin + next, begin + n, better);
    std::sort(begin + sorted, begin + next, better);
    for (size_t i = sorted; i < next; ++i) {
      mass += candidates_[i].weight;
      if (mass >= target) {
        count_ = i + 1;
        return;
      }
    }
    sorted = next;
  }
}

int32_t Sampler::Sample(std::span<const float> logits, std::span<const int32_t> prompt,
                        std::span<const int32_t> output) {
  if (logits.empty()) return -1;
  const int32_t greedy = Prepare(logits, prompt, output);
  if (greedy >= 0) return greedy;

  // Draw r in [0, total) and return the token whose cumulative interval holds it. Tokens of
  // weight 0 own an empty interval and so are never returned.
  if (dense_) {
    const double total = vocab_math::Sum(weights_.data(), weights_.size());
    const double r = rng_.NextDouble() * total;
    double mass = 0.0;
    for (size_t i = 0; i < weights_.size(); ++i) {
      mass += weights_[i];
      if (mass > r) return static_cast<int32_t>(i);
    }
    // Rounding left r at the very top: the last token with any weight.
    for (size_t i = weights_.size(); i-- > 0;) {
      if (weights_[i] > 0.0f) return static_cast<int32_t>(i);
    }
    return 0;
  }
  double total = 0.0;
  for (size_t i = 0; i < count_; ++i) total += candidates_[i].weight;
  const double r = rng_.NextDouble() * total;
  double mass = 0.0;
  for (size_t i = 0; i < count_; ++i) {
    mass += candidates_[i].weight;
    if (mass > r) return candidates_[i].id;
  }
  for (size_t i = count_; i-- > 0;) {
    if (candidates_[i].weight > 0.0f) return candidates_[i].id;
  }
  return candidates_[0].id;
}

std::vector<TokenProb> Sampler::Distribution(std::span<const float> logits,
                                             std::span<const int32_t> prompt,
                                             std::span<const int32_t> output) {
  if (logits.empty()) return {};
  const int32_t greedy = Prepare(logits, prompt, output);
  if (greedy >= 0) return {{greedy, 1.0f}};

  std::vector<Candidate> survivors;
  if (dense_) {
    for (size_t i = 0; i < weights_.size(); ++i) {
      survivors.push_back({work_[i], weights_[i], static_cast<int32_t>(i)});
    }
  } else {
    survivors.assign(candidates_.begin(), candidates_.begin() + count_);
  }
  // Weight-0 tokens (masked, or underflowed) are not in the distribution.
  std::erase_if(survivors, [](const Candidate& c) { return c.weight <= 0.0f; });
  std::sort(survivors.begin(), survivors.end(),
            [](const Candidate& a, const Candidate& b) { return Better(a, b); });
  double total = 0.0;
  for (const Candidate& c : survivors) total += c.weight;
  std::vector<TokenProb> out(survivors.size());
  for (size_t i = 0; i < survivors.size(); ++i) {
    out[i] = {survivors[i].id, static_cast<float>(survivors[i].weight / total)};
  }
  return out;
}

}  // namespace g4
