// The sampler's passes over the whole vocabulary (262144 logits for Gemma 4), written so the
// compiler vectorises them at the project's flags (plain -O3, baseline SSE2, no fast-math):
// branch-free bodies, __restrict pointers, independent accumulator lanes instead of one
// serial reduction. Each is O(V) and allocation-free.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace g4::vocab_math {

// e^x for x <= 0 without a libm call per element. x = n ln2 + r with |r| <= ln2 / 2; e^r by
// its degree-7 Taylor polynomial; 2^n built in the exponent bits. Relative error < 3e-7, a
// few float ulps. Exactly 1 at x = 0 (so a max-logit token has weight 1 and min_p = 1
// keeps it) and exactly 0 below -87, where 2^n would leave the normal range, -inf included (a
// token masked with -inf can never be drawn). Being plain arithmetic it gives the same bits
// on every platform, unlike libm, which keeps seeded sampling reproducible across machines.
inline float FastExp(float x) {
  // The clamp at -87 is an unsigned min on the bits (for x <= 0 the bit pattern grows with
  // |x|; -inf and NaN are above it too) and the underflow a final bit mask: no float
  // conditional, which GCC would turn into a branch and stop the calling loops vectorising.
  constexpr uint32_t kLow = std::bit_cast<uint32_t>(-87.0f);
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  const uint32_t keep = 0u - static_cast<uint32_t>(bits <= kLow);  // also every x >= 0
  const float xc = std::bit_cast<float>(bits < kLow ? bits : kLow);
  // n = round(x / ln 2) without a libm call: adding 1.5 * 2^23 pushes the fraction bits out.
  const float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  // r = x - n ln 2 in two steps (Cody-Waite): ln 2's high part has few bits, so n times it is
  // exact and r keeps full precision even at x = -87.
  const float r = (xc - n * 0.693359375f) - n * -2.12194440e-4f;
  float p = 1.0f / 5040;
  p = p * r + 1.0f / 720;
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const float scale = std::bit_cast<float>((static_cast<int32_t>(n) + 127) << 23);
  return std::bit_cast<float>(std::bit_cast<uint32_t>(p * scale) & keep);
}

// In place: NaN -> -inf (never drawn), +inf -> the largest float (so logit - max stays
// finite). Returns the max after that; -inf when every value is -inf or NaN (or n == 0).
float SanitizeAndMax(float* __restrict v, size_t n);

// out[i] = FastExp((logits[i] - max) * inv_t): each token's probability times a common
// factor, 1 for the best token.
void ExpWeights(const float* __restrict logits, size_t n, float max, float inv_t,
                float* __restrict out);

// Sum of non-negative weights in double.
double Sum(const float* w, size_t n);

// Weight bands for the top-p histogram: a weight w in (0, 1] falls in band
// (bits(1) - bits(w)) >> 20, i.e. by its binary exponent and top 3 mantissa bits: 8 bands per
// octave: band 0 is (0.9375, 1], the smallest normal float is in band 1008, denormals run to
// band 1015 and 0 is band 1016. A band is a monotone function of w, so for b <= 1015
// "band <= b" is "w > BandFloor(b)".
inline constexpr int kWeightBands = 1017;
inline int WeightBand(float w) {
  return static_cast<int>((0x3F800000u - std::bit_cast<uint32_t>(w)) >> 20);
}
inline float BandFloor(int band) {  // band in [0, 1015]; BandFloor(1015) == 0
  return std::bit_cast<float>(0x3F800000u - (static_cast<uint32_t>(band + 1) << 20));
}

// hist[b] = sum of the weights in band b, for b < kWeightBands. `hist` has
// kMassByBandScratch entries (the rest is scratch: interleaved partial histograms).
inline constexpr int kMassByBandScratch = 4 * kWeightBands;
void MassByBand(const float* w, size_t n, double* hist);

}  // namespace g4::vocab_math
