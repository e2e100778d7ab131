// FillKvCache (g4 bench --kv-fill): positions [size, n) in every layer that owns K/V, a ring its
// last window, values in [-1, 1) as the cache's dtype stores them; a fill continues a cache that
// holds some positions, and one past the cache's context is refused.
#include "runtime/kv_cache/kv_fill.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "model/gemma4/config.h"
#include "synthetic/gemma4.h"

namespace g4 {
namespace {

TEST(KvFillTest, FillsEveryOwningLayerUpToN) {
  SyntheticOptions o;
  o.preset = "tiny";  // window 8
  auto config = ParseGemma4Config(nlohmann::json::parse(SyntheticConfig(o)->dump()), nullptr);
  ASSERT_TRUE(config.ok());
  ModelInfo info;
  info.layers = KvLayouts(*config);
  Backend cpu(BackendKind::kCpu, 1);
  for (KvDtype dtype : {KvDtype::kF32, KvDtype::kBF16}) {
    SCOPED_TRACE(KvDtypeName(dtype));
    auto cache = SequenceKvCache::Create(info.layers, 64, HostMemory(), dtype);
    ASSERT_TRUE(cache.ok()) << cache.status().ToString();
    SequenceKvCache& c = **cache;
    ASSERT_TRUE(FillKvCache(info, cpu, c, 5).ok());
    ASSERT_TRUE(FillKvCache(info, cpu, c, 20, 2).ok());  // on from 5
    EXPECT_EQ(c.size(), 20);
    // Each layer's view once position 20 is written: exactly what a prompt of 20 leaves.
    int32_t next = 20;
    ASSERT_TRUE(c.Reserve(&next, 1).ok());
    const KvWriter write = [&cpu](const KvWriteArgs& a) { cpu.KvWrite(a); };
    int layers = 0;
    for (const KvLayout& l : info.layers) {
      if (l.shared()) continue;
      ++layers;
      const int64_t row = static_cast<int64_t>(l.n_kv_heads) * l.head_dim;
      const std::vector<float> zero(static_cast<size_t>(row), 0.0f);
      auto view = c.Write(write, l.index, zero.data(), zero.data(), &next, 1);
      ASSERT_TRUE(view.ok()) << view.status().ToString();
      std::set<int32_t> held;
      float amax = 0.0f;
      int nonzero = 0;
      for (int64_t s = 0; s < view->S; ++s) {
        const int32_t p = view->pos[s];
        if (p < 0 || p == next) continue;
        held.insert(p);
        for (int64_t i = 0; i < row; ++i) {
          const float k = dtype == KvDtype::kF32 ? view->k[s * row + i]
                                                 : Bf16ToF32(view->k16[s * row + i]);
          amax = std::max(amax, std::fabs(k));
          nonzero += k != 0.0f;
        }
      }
      const int32_t first = l.sliding() ? std::max(0, next + 1 - l.window) : 0;
      EXPECT_EQ(held.size(), static_cast<size_t>(next - first)) << "layer " << l.index;
      EXPECT_EQ(*held.begin(), first) << "layer " << l.index;
      EXPECT_LE(amax, 1.0f) << "layer " << l.index;
      EXPECT_GT(nonzero, 0) << "layer " << l.index;
    }
    EXPECT_GT(layers, 0);
    auto past = FillKvCache(info, cpu, c, 65);
    ASSERT_FALSE(past.ok());
    EXPECT_THAT(past.message(), ::testing::HasSubstr("exceed the cache's 64"));
  }
}

}  // namespace
}  // namespace g4
