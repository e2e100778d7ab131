// Vocabulary-wide passes for the sampler; see vocab_math.h for why they look like this.
#include "runtime/sampling/vocab_math.h"

#include <algorithm>
#include <limits>

namespace g4::vocab_math {
namespace {

// Reductions keep this many independent lanes: a float max or sum written as one serial
// chain may not be reordered (no fast-math), so it would neither vectorise nor pipeline.
constexpr size_t kLanes = 8;

}  // namespace

namespace {

// A signed int that orders like the float (for non-NaN values); its own inverse. Integer
// compares and min/max vectorise; float ones with NaN semantics do not.
inline int32_t Key(int32_t bits) { return bits ^ ((bits >> 31) & 0x7FFFFFFF); }

}  // namespace

float SanitizeAndMax(float* __restrict v, size_t n) {
  // One read-only pass for the key range; the rewrite pass only when a NaN or +inf is there
  // (a NaN's key lies outside [key(-inf), key(+inf)), on either side by its sign bit).
  const int32_t neg_inf = Key(std::bit_cast<int32_t>(-std::numeric_limits<float>::infinity()));
  const int32_t pos_inf = Key(std::bit_cast<int32_t>(std::numeric_limits<float>::infinity()));
  int32_t lo = neg_inf, hi = neg_inf;
  for (size_t i = 0; i < n; ++i) {
    const int32_t k = Key(std::bit_cast<int32_t>(v[i]));
    lo = k < lo ? k : lo;
    hi = k > hi ? k : hi;
  }
  if (lo >= neg_inf && hi < pos_inf) return std::bit_cast<float>(Key(hi));

  hi = neg_inf;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t b = std::bit_cast<uint32_t>(v[i]);
    uint32_t out = (b & 0x7FFFFFFFu) > 0x7F800000u ? 0xFF800000u : b;  // NaN -> -inf
    out = b == 0x7F800000u ? 0x7F7FFFFFu : out;                         // +inf -> max float
    v[i] = std::bit_cast<float>(out);
    const int32_t k = Key(static_cast<int32_t>(out));
    hi = k > hi ? k : hi;
  }
  return std::bit_cast<float>(Key(hi));
}

void ExpWeights(const float* __restrict logits, size_t n, float max, float inv_t,
                float* __restrict out) {
  for (size_t i = 0; i < n; ++i) out[i] = FastExp((logits[i] - max) * inv_t);
}

double Sum(const float* w, size_t n) {
  double lanes[kLanes] = {};
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (size_t j = 0; j < kLanes; ++j) lanes[j] += w[i + j];
  }
  for (; i < n; ++i) lanes[0] += w[i];
  double total = 0.0;
  for (double x : lanes) total += x;
  return total;
}

void MassByBand(const float* w, size_t n, double* hist) {
  // Four interleaved histograms, so neighbouring tokens in the same band do not wait on each
  // other's read-modify-write of one counter.
  constexpr int kCopies = kMassByBandScratch / kWeightBands;
  std::fill(hist, hist + kMassByBandScratch, 0.0);
  size_t i = 0;
  for (; i + kCopies <= n; i += kCopies) {
    for (int c = 0; c < kCopies; ++c) hist[c * kWeightBands + WeightBand(w[i + c])] += w[i + c];
  }
  for (; i < n; ++i) hist[WeightBand(w[i])] += w[i];
  for (int b = 0; b < kWeightBands; ++b) {
    for (int c = 1; c < kCopies; ++c) hist[b] += hist[c * kWeightBands + b];
  }
}

}  // namespace g4::vocab_math
