// The KV caches in a Memory the host cannot read (a GPU's, here ProtectedMemory): the views
// they return hold exactly what the same caches hold in host memory, step by step, and the
// caches never dereference a pointer of that memory (it would fault) nor leak an allocation.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "common/memory_kv_writer.h"
#include "common/protected_memory.h"
#include "model/gemma4/config.h"
#include "ops/backend.h"
#include "runtime/kv_cache/kv_cache.h"
#include "synthetic/gemma4.h"

namespace g4 {
namespace {

using testing::MemoryKvWriter;
using testing::ProtectedMemory;

// `n` random values, the same for the same seed.
std::vector<float> Random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> out(n);
  for (float& x : out) x = u(rng);
  return out;
}

template <typename T>
std::vector<T> Download(Memory& m, const T* p, int64_t n) {
  std::vector<T> out(static_cast<size_t>(n));
  EXPECT_TRUE(m.Download(out.data(), p, out.size() * sizeof(T)).ok());
  return out;
}

// What a view holds, read through its memory.
struct HostView {
  std::vector<float> k, v;
  std::vector<int32_t> pos;
};
HostView Read(Memory& m, const KvView& view, int row) {
  return {Download(m, view.k, view.S * row), Download(m, view.v, view.S * row),
          Download(m, view.pos, view.S)};
}

// Feeds the same chunks to a cache in host memory (written by the ref KvWrite) and one in
// protected memory (written through the Memory only); the k/v and positions of a chunk are
// uploaded to the cache's memory first, as the forward pass hands them over.
template <typename Cache>
void ExpectSameViews(Cache& host, Cache& dev, ProtectedMemory& mem, int row,
                     const std::vector<int>& chunks) {
  Backend ref(BackendKind::kRef, 1);
  const KvWriter host_write = [&ref](const KvWriteArgs& a) { ref.KvWrite(a); };
  int32_t next = 0;
  uint32_t seed = 1;
  for (int C : chunks) {
    SCOPED_TRACE("chunk of " + std::to_string(C) + " at " + std::to_string(next));
    const std::vector<float> k = Random(static_cast<size_t>(C) * row, seed++);
    const std::vector<float> v = Random(k.size(), seed++);
    std::vector<int32_t> pos(static_cast<size_t>(C));
    for (int i = 0; i < C; ++i) pos[static_cast<size_t>(i)] = next + i;
    Buffer<float> dk(mem), dv(mem);
    Buffer<int32_t> dpos(mem);
    ASSERT_TRUE(dk.Assign(k).ok());
    ASSERT_TRUE(dv.Assign(v).ok());
    ASSERT_TRUE(dpos.Assign(pos).ok());
    ASSERT_TRUE(host.Reserve(pos.data(), C).ok());
    ASSERT_TRUE(dev.Reserve(pos.data(), C).ok());
    auto want = host.Write(host_write, k.data(), v.data(), pos.data(), C);
    auto got = dev.Write(MemoryKvWriter(mem), dk.data(), dv.data(), dpos.data(), C);
    ASSERT_TRUE(want.ok() && got.ok()) << got.status().ToString();
    ASSERT_EQ(got->S, want->S);
    const HostView g = Read(mem, *got, row);
    EXPECT_EQ(g.pos, std::vector<int32_t>(want->pos, want->pos + want->S));
    for (int64_t s = 0; s < want->S; ++s) {
      if (want->pos[s] < 0) continue;  // an empty slot's bytes are not part of the contract
      for (int d = 0; d < row; ++d) {
        ASSERT_EQ(g.k[static_cast<size_t>(s * row + d)], want->k[s * row + d]) << "slot " << s;
        ASSERT_EQ(g.v[static_cast<size_t>(s * row + d)], want->v[s * row + d]) << "slot " << s;
      }
    }
    next += C;
  }
}

TEST(KvCacheMemoryTest, RingInDeviceMemoryHoldsWhatTheHostRingHolds) {
  ProtectedMemory mem;
  {
    const int W = 5, nkv = 2, hd = 3;
    RingKvCache host(W, nkv, hd), dev(W, nkv, hd, mem);
    // Single steps, chunks shorter and longer than the window, wrapping the ring mid-chunk.
    ExpectSameViews(host, dev, mem, nkv * hd, {1, 1, 3, 1, 7, 1, 12, 1, 1, 2, 4});
    EXPECT_EQ(dev.slot_positions(), host.slot_positions());
    dev.Reset();
    host.Reset();
    ExpectSameViews(host, dev, mem, nkv * hd, {2, 1, 6});  // a reset ring forgets everything
  }
  EXPECT_EQ(mem.live_allocations(), 0);
}

TEST(KvCacheMemoryTest, FullCacheInDeviceMemoryHoldsWhatTheHostOneHolds) {
  ProtectedMemory mem;
  {
    const int nkv = 1, hd = 5;
    FullKvCache host(nkv, hd, /*block_size=*/4, /*max_positions=*/64);
    FullKvCache dev(nkv, hd, 4, 64, mem);
    // Chunks that start and end inside blocks, fill one exactly, span several, and grow it.
    ExpectSameViews(host, dev, mem, nkv * hd, {3, 1, 1, 6, 1, 9, 1, 1, 4, 13});
    EXPECT_EQ(dev.num_blocks(), host.num_blocks());
    dev.Reset();
    host.Reset();
    ExpectSameViews(host, dev, mem, nkv * hd, {1, 5, 1});
  }
  EXPECT_EQ(mem.live_allocations(), 0);
}

TEST(KvCacheMemoryTest, SequenceCacheLivesInTheMemoryItWasGiven) {
  SyntheticOptions o;
  o.preset = "e2b";
  auto config = ParseGemma4Config(nlohmann::json::parse(SyntheticConfig(o)->dump()), nullptr);
  ASSERT_TRUE(config.ok());
  ProtectedMemory mem;
  {
    auto cache = SequenceKvCache::Create(KvLayouts(*config), 64, mem);
    ASSERT_TRUE(cache.ok()) << cache.status().ToString();
    EXPECT_EQ(&(*cache)->memory(), &mem);
    EXPECT_EQ(mem.live_allocations(), 0);  // nothing before the first write
    const std::vector<int32_t> pos = {0, 1};
    Buffer<int32_t> dpos(mem);
    ASSERT_TRUE(dpos.Assign(pos).ok());
    ASSERT_TRUE((*cache)->Reserve(pos.data(), 2).ok());
    for (const LayerConfig& l : config->layers) {
      if (l.kv_shared()) continue;
      Buffer<float> k(mem);
      ASSERT_TRUE(k.Assign(Random(static_cast<size_t>(2 * l.n_kv_heads * l.head_dim), 7)).ok());
      auto view = (*cache)->Write(MemoryKvWriter(mem), l.index, k.data(), k.data(), dpos.data(), 2);
      ASSERT_TRUE(view.ok()) << view.status().ToString();
      const std::vector<int32_t> held = Download(mem, view->pos, view->S);
      EXPECT_EQ(std::count(held.begin(), held.end(), 1), 1);
    }
    EXPECT_EQ((*cache)->size(), 2);
    EXPECT_GT(mem.live_allocations(), 0);
  }
  EXPECT_EQ(mem.live_allocations(), 0);
  auto host = SequenceKvCache::Create(KvLayouts(*config), 64);
  ASSERT_TRUE(host.ok());
  EXPECT_EQ(&(*host)->memory(), &HostMemory());
}

}  // namespace
}  // namespace g4
