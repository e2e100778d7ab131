// The golden greedy check shared by the CPU decode tests (tests/runtime/decode_test.cc) and the
// CUDA ones (tests/kernels/cuda/emu/emu_decode_test.cc): a golden case's prompt prefilled
// through the KV cache in chunks of 5, then one token at a time, reproduces meta.json's greedy
// ids exactly and greedy_logits.f32 within `tol` at every step (the cache stores `kv`).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "common/golden_cases.h"
#include "model/causal_lm.h"
#include "runtime/prefill.h"

namespace g4::testing {

// Max |a - b| over all entries (NaN counts as infinite; different sizes too).
inline double MaxDiff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = std::fabs(static_cast<double>(a[i]) - b[i]);
    if (!(d <= m)) m = std::isnan(d) ? INFINITY : d;
  }
  return m;
}

// Runs the check for the case in `dir` whose meta.json has a "greedy" entry.
inline void ExpectCachedGreedyMatchesGolden(const CausalLM& model, Backend& backend,
                                            const std::string& dir, const nlohmann::json& meta,
                                            double tol, KvDtype kv = KvDtype::kF32) {
  const int64_t V = model.info().vocab_size;
  const std::vector<float> step_ref = ReadF32File(dir + "/greedy_logits.f32");
  const std::vector<int32_t> prompt = ReadIds(dir + "/input_ids.json");
  const auto& expected = meta["greedy"]["ids"];
  auto cache = SequenceKvCache::Create(model.info().layers,
                                       static_cast<int>(prompt.size() + expected.size() + 1),
                                       backend.memory(), kv);
  ASSERT_TRUE(cache.ok());
  auto logits = Prefill(model, backend, **cache, prompt, 5);
  ASSERT_TRUE(logits.ok()) << logits.status().ToString();
  for (size_t k = 0; k < expected.size(); ++k) {
    const std::vector<float> ref_row(step_ref.begin() + k * V, step_ref.begin() + (k + 1) * V);
    EXPECT_LE(MaxDiff(*logits, ref_row), tol) << "step " << k;
    const int32_t next =
        static_cast<int32_t>(std::max_element(logits->begin(), logits->end()) - logits->begin());
    ASSERT_EQ(next, expected[k].get<int32_t>()) << "greedy step " << k;
    const int32_t one[] = {next};
    logits = Prefill(model, backend, **cache, one, 1);
    ASSERT_TRUE(logits.ok()) << logits.status().ToString();
  }
}

}  // namespace g4::testing
