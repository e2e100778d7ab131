// Tests for the Sampler: each filter against a known distribution (exact survivor sets from
// Distribution(), then seeded draws checked with a chi-square bound), seeding, penalties, and
// parameter validation.
#include "runtime/sampling/sampler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <vector>

namespace g4 {
namespace {

using ::testing::HasSubstr;

constexpr int kDraws = 20000;

SamplingParams Seeded(uint64_t seed = 1234) {
  SamplingParams p;
  p.seed = seed;
  return p;
}

// Logits whose softmax is exactly `probs` (up to float rounding).
std::vector<float> LogitsFor(const std::vector<double>& probs) {
  std::vector<float> logits;
  for (double p : probs) {
    logits.push_back(p > 0 ? static_cast<float>(std::log(p))
                           : -std::numeric_limits<float>::infinity());
  }
  return logits;
}

std::vector<int32_t> Ids(const std::vector<TokenProb>& dist) {
  std::vector<int32_t> ids;
  for (const TokenProb& t : dist) ids.push_back(t.id);
  return ids;
}

// Chi-square critical values at significance 0.001 for 1..10 degrees of freedom. The draws
// are seeded, so this is a fixed check that the frequencies follow the expected law.
double ChiSquareCritical(size_t df) {
  static const double kTable[] = {10.828, 13.816, 16.266, 18.467, 20.515,
                                  22.458, 24.322, 26.124, 27.877, 29.588};
  return kTable[std::min<size_t>(df, 10) - 1];
}

// Draws kDraws tokens; fails if a token outside `expected` appears or the frequencies fail a
// chi-square test against the expected probabilities.
void ExpectSamplesFollow(Sampler& sampler, const std::vector<float>& logits,
                         const std::map<int32_t, double>& expected) {
  std::map<int32_t, int> counts;
  for (int i = 0; i < kDraws; ++i) ++counts[sampler.Sample(logits)];
  for (const auto& [id, n] : counts) {
    EXPECT_TRUE(expected.count(id)) << "token " << id << " drawn " << n << " times";
  }
  double total_p = 0.0;
  for (const auto& [id, p] : expected) total_p += p;
  double chi2 = 0.0;
  for (const auto& [id, p] : expected) {
    const double e = kDraws * p / total_p;
    const double d = counts[id] - e;
    chi2 += d * d / e;
  }
  if (expected.size() > 1) {
    EXPECT_LT(chi2, ChiSquareCritical(expected.size() - 1)) << "chi-square " << chi2;
  }
}

void ExpectDistribution(const std::vector<TokenProb>& dist,
                        const std::map<int32_t, double>& expected) {
  ASSERT_EQ(dist.size(), expected.size());
  for (const TokenProb& t : dist) {
    ASSERT_TRUE(expected.count(t.id)) << "unexpected token " << t.id;
    EXPECT_NEAR(t.prob, expected.at(t.id), 1e-5) << "token " << t.id;
  }
}

// ---- Validation ----

TEST(SamplingParamsTest, DefaultsAreValid) {
  EXPECT_TRUE(SamplingParams().Validate().ok());
  EXPECT_FALSE(SamplingParams().IsGreedy());
}

TEST(SamplingParamsTest, RejectsOutOfRangeNamingTheField) {
  struct Case {
    void (*mutate)(SamplingParams&);
    const char* field;
  };
  const Case cases[] = {
      {[](SamplingParams& p) { p.temperature = -0.5f; }, "temperature"},
      {[](SamplingParams& p) { p.temperature = std::numeric_limits<float>::quiet_NaN(); },
       "temperature"},
      {[](SamplingParams& p) { p.temperature = std::numeric_limits<float>::infinity(); },
       "temperature"},
      {[](SamplingParams& p) { p.top_k = -1; }, "top_k"},
      {[](SamplingParams& p) { p.top_p = 0.0f; }, "top_p"},
      {[](SamplingParams& p) { p.top_p = 1.5f; }, "top_p"},
      {[](SamplingParams& p) { p.min_p = -0.1f; }, "min_p"},
      {[](SamplingParams& p) { p.min_p = 1.1f; }, "min_p"},
      {[](SamplingParams& p) { p.repetition_penalty = 0.0f; }, "repetition_penalty"},
      {[](SamplingParams& p) { p.repetition_penalty = -1.0f; }, "repetition_penalty"},
      {[](SamplingParams& p) { p.presence_penalty = 2.5f; }, "presence_penalty"},
      {[](SamplingParams& p) { p.frequency_penalty = -3.0f; }, "frequency_penalty"},
      {[](SamplingParams& p) { p.frequency_penalty = std::numeric_limits<float>::quiet_NaN(); },
       "frequency_penalty"},
      {[](SamplingParams& p) { p.logit_bias = {{3, 100.5f}}; }, "logit_bias"},
      {[](SamplingParams& p) { p.logit_bias = {{3, -101.0f}}; }, "logit_bias"},
      {[](SamplingParams& p) { p.logit_bias = {{-1, 1.0f}}; }, "logit_bias"},
      {[](SamplingParams& p) { p.logit_bias = {{2, std::numeric_limits<float>::quiet_NaN()}}; },
       "logit_bias"},
  };
  for (const Case& c : cases) {
    SamplingParams p;
    c.mutate(p);
    const Status s = p.Validate();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.field;
    EXPECT_THAT(s.message(), HasSubstr(std::string("SamplingParams.") + c.field));
    EXPECT_FALSE(Sampler::Create(p).ok()) << c.field;
  }
}

TEST(SamplingParamsTest, AcceptsBoundaryValues) {
  SamplingParams p;
  p.temperature = 0.0f;
  p.top_p = 1.0f;
  p.min_p = 1.0f;
  p.presence_penalty = -2.0f;
  p.frequency_penalty = 2.0f;
  p.repetition_penalty = 0.5f;
  p.logit_bias = {{0, -100.0f}, {7, 100.0f}};
  EXPECT_TRUE(p.Validate().ok()) << p.Validate().ToString();
  EXPECT_TRUE(Sampler::Create(p).ok());
}

// ---- Greedy ----

TEST(SamplerTest, GreedyTakesArgmaxLowestIdOnTies) {
  SamplingParams p = Seeded();
  p.greedy = true;
  Sampler s(p);
  const std::vector<float> logits = {1.0f, 3.0f, -2.0f, 3.0f, 2.9f};
  EXPECT_EQ(s.Sample(logits), 1);
  const std::vector<TokenProb> dist = s.Distribution(logits);
  ASSERT_EQ(dist.size(), 1u);
  EXPECT_EQ(dist[0].id, 1);
  EXPECT_EQ(dist[0].prob, 1.0f);
}

TEST(SamplerTest, TemperatureZeroAndTinyAreGreedy) {
  const std::vector<float> logits = {0.5f, 2.0f, 2.0f, 1.9f};
  for (float t : {0.0f, 1e-6f}) {
    SamplingParams p = Seeded();
    p.temperature = t;
    EXPECT_TRUE(p.IsGreedy());
    Sampler s(p);
    for (int i = 0; i < 100; ++i) ASSERT_EQ(s.Sample(logits), 1) << "T=" << t;
  }
}

TEST(SamplerTest, LowTemperatureConvergesToGreedy) {
  // T = 0.01 still samples, but a gap of 0.5 becomes e^-50: every draw is the argmax.
  SamplingParams p = Seeded();
  p.temperature = 0.01f;
  EXPECT_FALSE(p.IsGreedy());
  Sampler s(p);
  const std::vector<float> logits = {0.5f, 1.0f, 1.5f, 1.0f};
  for (int i = 0; i < 2000; ++i) ASSERT_EQ(s.Sample(logits), 2);
}

TEST(SamplerTest, TopK1IsGreedy) {
  SamplingParams p = Seeded();
  p.top_k = 1;
  p.temperature = 5.0f;
  Sampler s(p);
  const std::vector<float> logits = {0.0f, 4.0f, 4.0f, 3.99f};
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(s.Sample(logits), 1);
}

// ---- Temperature ----

TEST(SamplerTest, TemperatureOneFollowsSoftmax) {
  Sampler s(Seeded());
  const std::vector<float> logits = LogitsFor({0.1, 0.2, 0.3, 0.4});
  const std::map<int32_t, double> expected = {{0, 0.1}, {1, 0.2}, {2, 0.3}, {3, 0.4}};
  ExpectDistribution(s.Distribution(logits), expected);
  ExpectSamplesFollow(s, logits, expected);
}

TEST(SamplerTest, TemperatureFlattensAndSharpens) {
  // Logits 0, ln 2, ln 4: T = 2 gives weights 1, sqrt 2, 2; T = 0.5 gives 1, 4, 16.
  const std::vector<float> logits = LogitsFor({1.0 / 7, 2.0 / 7, 4.0 / 7});
  SamplingParams hot = Seeded();
  hot.temperature = 2.0f;
  Sampler s_hot(hot);
  const double z = 3 + std::sqrt(2.0);
  const std::map<int32_t, double> flat = {{0, 1 / z}, {1, std::sqrt(2.0) / z}, {2, 2 / z}};
  ExpectDistribution(s_hot.Distribution(logits), flat);
  ExpectSamplesFollow(s_hot, logits, flat);

  SamplingParams cold = Seeded();
  cold.temperature = 0.5f;
  Sampler s_cold(cold);
  const std::map<int32_t, double> sharp = {{0, 1.0 / 21}, {1, 4.0 / 21}, {2, 16.0 / 21}};
  ExpectDistribution(s_cold.Distribution(logits), sharp);
  ExpectSamplesFollow(s_cold, logits, sharp);
}

// ---- Top-k / top-p / min-p ----

TEST(SamplerTest, TopKKeepsExactlyTheKBest) {
  SamplingParams p = Seeded();
  p.top_k = 3;
  Sampler s(p);
  // probs 0.05 0.3 0.1 0.25 0.2 0.1: the best three are 1, 3, 4 (mass 0.75).
  const std::vector<float> logits = LogitsFor({0.05, 0.3, 0.1, 0.25, 0.2, 0.1});
  const std::map<int32_t, double> expected = {{1, 0.3 / 0.75}, {3, 0.25 / 0.75}, {4, 0.2 / 0.75}};
  ExpectDistribution(s.Distribution(logits), expected);
  ExpectSamplesFollow(s, logits, expected);
}

TEST(SamplerTest, TopKTieAtTheCutKeepsLowerIds) {
  SamplingParams p = Seeded();
  p.top_k = 2;
  Sampler s(p);
  const std::vector<float> logits = {1.0f, 2.0f, 1.0f, 1.0f};
  EXPECT_THAT(Ids(s.Distribution(logits)), ::testing::ElementsAre(1, 0));
}

TEST(SamplerTest, TopKLargerThanVocabIsOff) {
  SamplingParams p = Seeded();
  p.top_k = 100;
  Sampler s(p);
  EXPECT_EQ(s.Distribution(LogitsFor({0.25, 0.25, 0.5})).size(), 3u);
}

TEST(SamplerTest, TopPKeepsTheSmallestNucleus) {
  const std::vector<float> logits = LogitsFor({0.15, 0.5, 0.05, 0.3});  // order 1, 3, 0, 2
  struct Case {
    float top_p;
    std::vector<int32_t> ids;
  };
  for (const Case& c : {Case{0.3f, {1}}, Case{0.45f, {1}}, Case{0.75f, {1, 3}},
                        Case{0.85f, {1, 3, 0}}, Case{0.99f, {1, 3, 0, 2}}}) {
    SamplingParams p = Seeded();
    p.top_p = c.top_p;
    Sampler s(p);
    EXPECT_EQ(Ids(s.Distribution(logits)), c.ids) << "top_p=" << c.top_p;
  }
  SamplingParams p = Seeded();
  p.top_p = 0.85f;
  Sampler s(p);
  const std::map<int32_t, double> expected = {{1, 0.5 / 0.95}, {3, 0.3 / 0.95}, {0, 0.15 / 0.95}};
  ExpectDistribution(s.Distribution(logits), expected);
  ExpectSamplesFollow(s, logits, expected);
}

TEST(SamplerTest, TopPOnAFlatDistributionCutsTiesByLowerId) {
  // 1000 equal logits: the nucleus of 0.5 is exactly the 500 lowest ids.
  SamplingParams p = Seeded();
  p.top_p = 0.5f;
  Sampler s(p);
  const std::vector<float> flat(1000, 0.25f);
  const std::vector<TokenProb> dist = s.Distribution(flat);
  ASSERT_EQ(dist.size(), 500u);
  for (int i = 0; i < 500; ++i) {
    EXPECT_EQ(dist[i].id, i);
    EXPECT_NEAR(dist[i].prob, 1.0 / 500, 1e-6);
  }
  for (int i = 0; i < 2000; ++i) ASSERT_LT(s.Sample(flat), 500);
}

TEST(SamplerTest, TopPAlwaysKeepsOneToken) {
  SamplingParams p = Seeded();
  p.top_p = 1e-6f;
  Sampler s(p);
  const std::vector<float> logits = LogitsFor({0.2, 0.2, 0.2, 0.4});
  for (int i = 0; i < 100; ++i) ASSERT_EQ(s.Sample(logits), 3);
}

TEST(SamplerTest, TopPMeasuresTheTopKDistribution) {
  // probs 0.4 0.35 0.25. Alone, top_p = 0.5 keeps {0, 1} (0.4 < 0.5). After top_k = 2 the
  // renormalised 0.4 / 0.75 = 0.53 reaches 0.5 by itself, so only token 0 survives (vLLM order).
  const std::vector<float> logits = LogitsFor({0.4, 0.35, 0.25});
  SamplingParams p = Seeded();
  p.top_p = 0.5f;
  EXPECT_EQ(Ids(Sampler(p).Distribution(logits)), (std::vector<int32_t>{0, 1}));
  p.top_k = 2;
  EXPECT_EQ(Ids(Sampler(p).Distribution(logits)), (std::vector<int32_t>{0}));
}

TEST(SamplerTest, TopPAfterTemperature) {
  // T = 0.5 squares the weights: 0.4 0.35 0.25 -> .16 .1225 .0625 (sum .345): 0 holds 0.46.
  const std::vector<float> logits = LogitsFor({0.4, 0.35, 0.25});
  SamplingParams p = Seeded();
  p.temperature = 0.5f;
  p.top_p = 0.45f;
  EXPECT_EQ(Ids(Sampler(p).Distribution(logits)), (std::vector<int32_t>{0}));
  p.temperature = 1.0f;
  EXPECT_EQ(Ids(Sampler(p).Distribution(logits)), (std::vector<int32_t>{0, 1}));
}

TEST(SamplerTest, MinPDropsTokensBelowTheFractionOfTheBest) {
  const std::vector<float> logits = LogitsFor({0.15, 0.5, 0.05, 0.3});
  struct Case {
    float min_p;
    std::vector<int32_t> ids;
  };
  // Thresholds 0.5 * min_p: 0.05 -> keeps all; 0.2 -> 0.1 drops 0.05; 0.5 -> 0.25; 1 -> max.
  for (const Case& c : {Case{0.05f, {1, 3, 0, 2}}, Case{0.2f, {1, 3, 0}}, Case{0.5f, {1, 3}},
                        Case{1.0f, {1}}}) {
    SamplingParams p = Seeded();
    p.min_p = c.min_p;
    EXPECT_EQ(Ids(Sampler(p).Distribution(logits)), c.ids) << "min_p=" << c.min_p;
  }
  SamplingParams p = Seeded();
  p.min_p = 0.2f;
  Sampler s(p);
  ExpectSamplesFollow(s, logits, {{1, 0.5}, {3, 0.3}, {0, 0.15}});
}

TEST(SamplerTest, MinPOneKeepsAllTiedMaxima) {
  SamplingParams p = Seeded();
  p.min_p = 1.0f;
  Sampler s(p);
  const std::vector<float> logits = {3.0f, 1.0f, 3.0f, 2.0f};
  EXPECT_EQ(Ids(s.Distribution(logits)), (std::vector<int32_t>{0, 2}));
  ExpectSamplesFollow(s, logits, {{0, 0.5}, {2, 0.5}});
}

TEST(SamplerTest, AllFiltersTogether) {
  // probs .3 .2 .15 .12 .1 .08 .05: top_k 5 -> mass .87; top_p .75 of it needs .6525 ->
  // {0,1,2,3} (.77); min_p .45 -> threshold .135 drops 3. Survivors 0, 1, 2.
  const std::vector<float> logits = LogitsFor({0.3, 0.2, 0.15, 0.12, 0.1, 0.08, 0.05});
  SamplingParams p = Seeded();
  p.top_k = 5;
  p.top_p = 0.75f;
  p.min_p = 0.45f;
  Sampler s(p);
  const std::map<int32_t, double> expected = {{0, 0.3 / 0.65}, {1, 0.2 / 0.65}, {2, 0.15 / 0.65}};
  ExpectDistribution(s.Distribution(logits), expected);
  ExpectSamplesFollow(s, logits, expected);
}

// Reference filter by full sort, for the large-vocab comparison below.
std::vector<int32_t> ReferenceSurvivors(const std::vector<float>& logits, const SamplingParams& p) {
  std::vector<int32_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  const float m = logits[order[0]];
  std::vector<double> w;
  for (int32_t id : order) w.push_back(std::exp((logits[id] - m) / p.temperature));
  size_t n = order.size();
  if (p.top_k > 0) n = std::min<size_t>(n, p.top_k);
  const double total = std::accumulate(w.begin(), w.begin() + n, 0.0);
  size_t keep = n;
  double mass = 0;
  for (size_t i = 0; i < n; ++i) {
    mass += w[i];
    if (mass >= p.top_p * total) {
      keep = i + 1;
      break;
    }
  }
  size_t minp = 0;
  while (minp < n && w[minp] >= p.min_p) ++minp;
  order.resize(std::min(keep, minp));
  return order;
}

TEST(SamplerTest, LargeVocabMatchesAFullSortReference) {
  constexpr int kVocab = 262144;
  std::mt19937 gen(7);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> logits(kVocab);
  for (float& l : logits) l = normal(gen);
  struct Case {
    int top_k;
    float top_p;
    float min_p;
    float temperature;
  };
  for (const Case& c : {Case{50, 1.0f, 0.0f, 1.0f}, Case{0, 0.9f, 0.0f, 1.0f},
                        Case{0, 0.5f, 0.0f, 0.7f}, Case{0, 1.0f, 0.05f, 1.0f},
                        Case{1000, 0.95f, 0.01f, 1.3f}, Case{0, 0.8f, 0.002f, 1.0f},
                        Case{0, 0.95f, 0.0f, 0.3f}, Case{20000, 0.9f, 0.0f, 1.0f}}) {
    SamplingParams p = Seeded();
    p.top_k = c.top_k;
    p.top_p = c.top_p;
    p.min_p = c.min_p;
    p.temperature = c.temperature;
    Sampler s(p);
    const std::vector<int32_t> got = Ids(s.Distribution(logits));
    const std::vector<int32_t> want = ReferenceSurvivors(logits, p);
    EXPECT_EQ(got.size(), want.size()) << "top_k=" << c.top_k << " top_p=" << c.top_p;
    EXPECT_EQ(got, want) << "top_k=" << c.top_k << " top_p=" << c.top_p;
    const auto t0 = std::chrono::steady_clock::now();
    constexpr int kReps = 20;
    for (int i = 0; i < kReps; ++i) {
      const int32_t id = s.Sample(logits);
      ASSERT_TRUE(std::find(want.begin(), want.end(), id) != want.end()) << id;
    }
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::printf("vocab %d top_k=%d top_p=%g min_p=%g: %zu survivors, %.2f ms/sample\n", kVocab,
                c.top_k, c.top_p, c.min_p, want.size(), ms / kReps);
  }
}

// ---- Seeds ----

std::vector<int32_t> Draw(Sampler& s, const std::vector<float>& logits, int n) {
  std::vector<int32_t> out;
  for (int i = 0; i < n; ++i) out.push_back(s.Sample(logits));
  return out;
}

TEST(SamplerTest, SameSeedSameSequenceDifferentSeedDifferent) {
  const std::vector<float> logits(100, 0.0f);  // uniform over 100 tokens
  Sampler a(Seeded(42)), b(Seeded(42)), c(Seeded(43));
  const std::vector<int32_t> sa = Draw(a, logits, 200);
  EXPECT_EQ(sa, Draw(b, logits, 200));
  EXPECT_NE(sa, Draw(c, logits, 200));
}

TEST(SamplerTest, UnseededSamplersDiffer) {
  const std::vector<float> logits(1000, 0.0f);
  Sampler a{SamplingParams{}}, b{SamplingParams{}};
  const std::vector<int32_t> sa = Draw(a, logits, 50);
  for (int32_t id : sa) ASSERT_TRUE(id >= 0 && id < 1000);
  EXPECT_NE(sa, Draw(b, logits, 50));
}

// ---- Penalties ----

TEST(SamplerTest, RepetitionPenaltyOverPromptAndOutputOncePerToken) {
  SamplingParams p;
  p.repetition_penalty = 2.0f;
  Sampler s(p);
  std::vector<float> logits = {2.0f, -2.0f, 1.0f, 0.5f, 3.0f};
  const std::vector<int32_t> prompt = {0, 0, 3};
  const std::vector<int32_t> output = {1, 1, 3, 99, -5};  // 99 and -5 are out of vocab
  s.ApplyPenalties(logits, prompt, output);
  EXPECT_THAT(logits, ::testing::ElementsAre(1.0f, -4.0f, 1.0f, 0.25f, 3.0f));
  // The scratch state is clean: the same call on fresh logits gives the same result.
  std::vector<float> again = {2.0f, -2.0f, 1.0f, 0.5f, 3.0f};
  s.ApplyPenalties(again, prompt, output);
  EXPECT_EQ(again, logits);
}

TEST(SamplerTest, FrequencyAndPresenceCountOutputOnly) {
  SamplingParams p;
  p.frequency_penalty = 0.5f;
  p.presence_penalty = 1.0f;
  Sampler s(p);
  std::vector<float> logits = {2.0f, 2.0f, 2.0f, 2.0f};
  // Token 0 is only in the prompt: untouched. Token 2 twice in output: -(0.5*2 + 1).
  s.ApplyPenalties(logits, std::vector<int32_t>{0, 0, 0}, std::vector<int32_t>{2, 3, 2});
  EXPECT_THAT(logits, ::testing::ElementsAre(2.0f, 2.0f, 0.0f, 0.5f));
  std::vector<float> again = {2.0f, 2.0f, 2.0f, 2.0f};
  s.ApplyPenalties(again, std::vector<int32_t>{0}, std::vector<int32_t>{2, 3, 2});
  EXPECT_EQ(again, logits);
}

TEST(SamplerTest, NegativePenaltiesEncourage) {
  SamplingParams p;
  p.frequency_penalty = -0.25f;
  p.presence_penalty = -1.0f;
  p.repetition_penalty = 0.5f;
  Sampler s(p);
  std::vector<float> logits = {1.0f, -1.0f, 1.0f};
  // Token 0: rep 1/0.5 = 2, then -(-0.25*1 - 1) -> 3.25. Token 1 (prompt only): -1*0.5.
  s.ApplyPenalties(logits, std::vector<int32_t>{1}, std::vector<int32_t>{0});
  EXPECT_THAT(logits, ::testing::ElementsAre(3.25f, -0.5f, 1.0f));
}

TEST(SamplerTest, RepetitionThenFrequencyInVllmOrder) {
  SamplingParams p;
  p.repetition_penalty = 2.0f;
  p.frequency_penalty = 1.0f;
  Sampler s(p);
  std::vector<float> logits = {4.0f, -4.0f};
  s.ApplyPenalties(logits, {}, std::vector<int32_t>{0, 1, 1});
  // 4/2 - 1 = 1 (not (4-1)/2 = 1.5); -4*2 - 2 = -10.
  EXPECT_THAT(logits, ::testing::ElementsAre(1.0f, -10.0f));
}

TEST(SamplerTest, PenaltiesChangeTheGreedyChoiceAndTheDistribution) {
  SamplingParams p = Seeded();
  p.greedy = true;
  p.repetition_penalty = 3.0f;
  Sampler s(p);
  const std::vector<float> logits = {3.0f, 2.0f, 0.0f};
  EXPECT_EQ(s.Sample(logits), 0);
  EXPECT_EQ(s.Sample(logits, std::vector<int32_t>{5, 0}, {}), 1);  // 3 / 3 = 1 < 2

  SamplingParams q = Seeded();
  q.presence_penalty = static_cast<float>(std::log(3.0));
  Sampler t(q);
  // Equal logits; token 0 was generated: its weight drops to 1/3 -> probs 1/7, 3/7, 3/7.
  const std::vector<float> flat = {1.0f, 1.0f, 1.0f};
  const std::vector<int32_t> output = {0};
  const std::vector<TokenProb> dist = t.Distribution(flat, {}, output);
  std::map<int32_t, double> expected = {{0, 1.0 / 7}, {1, 3.0 / 7}, {2, 3.0 / 7}};
  ExpectDistribution(dist, expected);
  std::map<int32_t, int> counts;
  for (int i = 0; i < kDraws; ++i) ++counts[t.Sample(flat, {}, output)];
  double chi2 = 0;
  for (const auto& [id, pr] : expected) {
    const double e = kDraws * pr;
    chi2 += (counts[id] - e) * (counts[id] - e) / e;
  }
  EXPECT_LT(chi2, ChiSquareCritical(2));
}

// Logit bias comes first (vLLM's order): +100 forces a token under greedy, -100 bans the
// argmax, a small bias moves the distribution by exactly exp(bias), ids past the vocabulary
// are ignored, and a grammar's -inf stays -inf.
TEST(SamplerTest, LogitBiasForcesBansAndShifts) {
  const std::vector<float> logits = {5.0f, 1.0f, 0.0f, -3.0f};
  SamplingParams g = Seeded();
  g.greedy = true;
  EXPECT_EQ(Sampler(g).Sample(logits), 0);
  g.logit_bias = {{3, 100.0f}};
  EXPECT_EQ(Sampler(g).Sample(logits), 3);
  g.logit_bias = {{0, -100.0f}, {99, 100.0f}};
  EXPECT_EQ(Sampler(g).Sample(logits), 1);

  SamplingParams r = Seeded();
  r.logit_bias = {{1, static_cast<float>(std::log(3.0))}};
  Sampler s(r);
  // Equal logits; token 1's weight triples -> probs 1/5, 3/5, 1/5.
  const std::vector<float> flat = {1.0f, 1.0f, 1.0f};
  ExpectDistribution(s.Distribution(flat), {{0, 0.2}, {1, 0.6}, {2, 0.2}});

  SamplingParams m = Seeded();
  m.greedy = true;
  m.logit_bias = {{2, 100.0f}};
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(Sampler(m).Sample(std::vector<float>{0.0f, 1.0f, -inf}), 1);

  // Before the penalties: 4 + 2 = 6, then / 3 = 2 < 2.5.
  SamplingParams q = Seeded();
  q.greedy = true;
  q.repetition_penalty = 3.0f;
  q.logit_bias = {{0, 2.0f}};
  EXPECT_EQ(Sampler(q).Sample(std::vector<float>{4.0f, 2.5f}, std::vector<int32_t>{0}, {}), 1);
}

// ---- Odd inputs ----

TEST(SamplerTest, NonFiniteLogits) {
  Sampler s(Seeded());
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(s.Sample(std::vector<float>{}), -1);
  EXPECT_EQ(s.Sample(std::vector<float>{-inf, -inf, -inf}), 0);
  const std::vector<float> some = {nan, -inf, 0.0f, nan, 0.0f};
  ExpectSamplesFollow(s, some, {{2, 0.5}, {4, 0.5}});
  const std::vector<float> pos_inf = {0.0f, inf, 5.0f};
  for (int i = 0; i < 100; ++i) ASSERT_EQ(s.Sample(pos_inf), 1);
}

TEST(SamplerTest, DistributionSumsToOne) {
  SamplingParams p = Seeded();
  p.top_p = 0.9f;
  Sampler s(p);
  std::vector<float> logits(5000);
  std::mt19937 gen(3);
  std::normal_distribution<float> normal;
  for (float& l : logits) l = normal(gen);
  double sum = 0;
  for (const TokenProb& t : s.Distribution(logits)) sum += t.prob;
  EXPECT_NEAR(sum, 1.0, 1e-4);
}

}  // namespace
}  // namespace g4
