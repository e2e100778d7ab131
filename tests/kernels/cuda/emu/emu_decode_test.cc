// Cached decoding on the CUDA backend, for the emulation (run_backend.sh; tests/runtime's decode
// tests run on the CPU backend only): every golden case prefilled through the KV cache in chunks
// of 5 and then decoded token by token reproduces meta.json's greedy ids and greedy_logits.f32
// within the golden tolerance, and chunked prefill (chunks of 3) gives the full forward's logits
// at every position. Skips without a device, like the other GPU tests. A case costs about a
// minute under emulation (decode launches many key-split attention blocks), so run_backend.sh
// runs three by default: tiny-bf16 (bf16 weights: f16 on a T4), tiny-window (the sliding
// window) and tiny-e2b-donors (head dims 32/64, so attention on the device; KV-sharing layers).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "common/golden_cases.h"
#include "common/greedy_check.h"
#include "kernels/cuda/kernels.h"
#include "model/gemma4.h"
#include "runtime/prefill.h"

namespace g4 {
namespace {

using testing::MaxDiff;

class EmuDecodeTest : public ::testing::TestWithParam<testing::GoldenCase> {};

std::string CaseName(const ::testing::TestParamInfo<testing::GoldenCase>& info) {
  std::string s = info.param.name;
  for (char& ch : s) if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

TEST_P(EmuDecodeTest, CachedGreedyMatchesGoldenAndChunksMatchFullForward) {
  const testing::GoldenCase& gc = GetParam();
  const auto meta = testing::ReadJson(gc.dir + "/meta.json");
  auto model = Gemma4Model::Load(gc.dir);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  Backend backend(BackendKind::kCuda, 1);
  if (!backend.status().ok()) GTEST_SKIP() << backend.status().message();
  const ModelConfig& c = (*model)->config();
  const double tol = meta["tolerance"]["fp32_engine"]["max_abs_diff"].get<double>();
  const std::vector<int32_t> prompt = testing::ReadIds(gc.dir + "/input_ids.json");

  auto full = (*model)->Forward(backend, prompt);
  ASSERT_TRUE(full.ok()) << full.status().ToString();
  {
    auto cache = SequenceKvCache::Create(c, 256, backend.memory());
    ASSERT_TRUE(cache.ok());
    auto cached = Prefill(**model, backend, **cache, prompt, 3, /*all_logits=*/true);
    ASSERT_TRUE(cached.ok()) << cached.status().ToString();
    EXPECT_LE(MaxDiff(*cached, *full), tol) << "chunks of 3";
  }

  if (meta.contains("greedy")) {
    testing::ExpectCachedGreedyMatchesGolden(**model, backend, gc.dir, meta, tol);
  }
  EXPECT_TRUE(cuda::LastError().ok()) << cuda::LastError().ToString();
}

INSTANTIATE_TEST_SUITE_P(Golden, EmuDecodeTest, ::testing::ValuesIn(testing::FindGoldenCases()),
                         CaseName);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(EmuDecodeTest);

}  // namespace
}  // namespace g4
