// The KV cache invariant: a slot holds one absolute real position; rings keep exactly the last
// W positions at slot p % W; full layers hold position p at entry p and grow rarely; positions
// are appended in order or refused; storage ids and memory figures; bf16 storage (the same
// slots, each value rounded, a ring chunk's own entries rounded too).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "core/q8_blocks.h"
#include "model/gemma4/config.h"
#include "ops/backend.h"
#include "ops/kv_blocks.h"
#include "runtime/kv_cache/kv_cache.h"
#include "synthetic/gemma4.h"

namespace g4 {
namespace {

using ::testing::HasSubstr;

std::vector<float> Row(int n, float value) { return std::vector<float>(static_cast<size_t>(n), value); }

// The ref backend's KvWrite: host caches in these tests.
const KvWriter& HostWrite() {
  static Backend* ref = new Backend(BackendKind::kRef, 1);
  static const KvWriter write = [](const KvWriteArgs& a) { ref->KvWrite(a); };
  return write;
}

// Reserve, then Write: one chunk at host positions pos[0..C).
template <typename Cache>
StatusOr<KvView> Append(Cache& cache, const float* k, const float* v, const int32_t* pos,
                        int64_t C) {
  G4_RETURN_IF_ERROR(cache.Reserve(pos, C));
  return cache.Write(HostWrite(), k, v, pos, C);
}

TEST(RingKvCacheTest, SlotHoldsPositionModWindowAndOnlyTheLastW) {
  const int W = 5, row = 3;  // 1 kv head, head dim 3
  RingKvCache ring(W, 1, row);
  for (int32_t p = 0; p < 13; ++p) {
    const std::vector<float> k = Row(row, static_cast<float>(p)), v = Row(row, -static_cast<float>(p));
    auto view = Append(ring, k.data(), v.data(), &p, 1);
    ASSERT_TRUE(view.ok());
    ASSERT_EQ(view->S, W);
    for (int s = 0; s < W; ++s) {
      const int32_t held = view->pos[s];
      if (held < 0) {
        EXPECT_GT(s, p);  // never-written slots only before the ring is full
        continue;
      }
      EXPECT_EQ(held % W, s);
      EXPECT_LE(held, p);
      EXPECT_GT(held, p - W);  // exactly the window: nothing stale
      EXPECT_EQ(view->k[s * row], static_cast<float>(held));  // the data belongs to that position
      EXPECT_EQ(view->v[s * row], -static_cast<float>(held));
    }
  }
}

TEST(RingKvCacheTest, ChunkLongerThanWindowKeepsEverythingItsQueriesNeed) {
  const int W = 4, row = 2;
  RingKvCache ring(W, 1, row);
  std::vector<int32_t> pos = {0, 1, 2};
  std::vector<float> k(pos.size() * row, 1.0f), v = k;
  ASSERT_TRUE(Append(ring, k.data(), v.data(), pos.data(), 3).ok());
  pos = {3, 4, 5, 6, 7, 8, 9};
  k.assign(pos.size() * row, 2.0f);
  v = k;
  auto view = Append(ring, k.data(), v.data(), pos.data(), 7);
  ASSERT_TRUE(view.ok());
  // The view has the ring before the chunk (positions 0..2, one empty slot) and the chunk.
  std::multiset<int32_t> held(view->pos, view->pos + view->S);
  for (int32_t p = 0; p <= 9; ++p) EXPECT_EQ(held.count(p), 1u) << p;
  // The ring itself now holds exactly 6..9.
  std::multiset<int32_t> ring_pos(ring.slot_positions().begin(), ring.slot_positions().end());
  EXPECT_EQ(ring_pos, (std::multiset<int32_t>{6, 7, 8, 9}));
}

// Chunks that end within the first W positions go straight into the ring (their slots were
// never written); the first one that would evict a position goes through the scratch gather.
TEST(RingKvCacheTest, ChunksBeforeTheRingWrapsAreWrittenInPlace) {
  const int W = 8, row = 2;
  RingKvCache ring(W, 1, row);
  auto append = [&](int32_t first, int64_t C) {
    std::vector<int32_t> pos(static_cast<size_t>(C));
    std::vector<float> k(static_cast<size_t>(C * row)), v(k.size());
    for (int64_t r = 0; r < C; ++r) {
      const int32_t p = first + static_cast<int32_t>(r);
      pos[static_cast<size_t>(r)] = p;
      for (int i = 0; i < row; ++i) {
        k[static_cast<size_t>(r * row + i)] = static_cast<float>(p);
        v[static_cast<size_t>(r * row + i)] = -static_cast<float>(p);
      }
    }
    return Append(ring, k.data(), v.data(), pos.data(), C);
  };
  for (const auto& [first, C] : std::vector<std::pair<int32_t, int64_t>>{{0, 3}, {3, 5}}) {
    auto view = append(first, C);
    ASSERT_TRUE(view.ok()) << view.status().ToString();
    EXPECT_EQ(view->k, ring.storage());  // the ring itself, no copy
    ASSERT_EQ(view->S, first + C);
    for (int32_t s = 0; s < view->S; ++s) {
      EXPECT_EQ(view->pos[s], s);
      EXPECT_EQ(view->k[s * row], static_cast<float>(s));
      EXPECT_EQ(view->v[s * row + 1], -static_cast<float>(s));
    }
  }
  auto wrapped = append(8, 2);  // would evict 0 and 1, which the query at 8 still sees
  ASSERT_TRUE(wrapped.ok());
  EXPECT_NE(wrapped->k, ring.storage());
  EXPECT_EQ(wrapped->S, W + 2);
  std::multiset<int32_t> held(wrapped->pos, wrapped->pos + wrapped->S);
  for (int32_t p = 0; p <= 9; ++p) EXPECT_EQ(held.count(p), 1u) << p;
}

// What position p's K holds at value i in these bf16 tests: not a bf16 value, so rounding shows.
float KeyValue(int32_t p, int i) { return static_cast<float>(p) + 0.3f + 0.01f * i; }

TEST(RingKvCacheTest, Bf16RingAndChunkViewHoldTheRoundedValuesOfTheirPositions) {
  const int W = 4, row = 3;
  RingKvCache ring(W, 1, row, HostMemory(), KvDtype::kBF16);
  EXPECT_EQ(ring.bytes(), 4u * (2 * 3 * 2 + 4));
  auto append = [&](int32_t first, int64_t C) {
    std::vector<int32_t> pos(static_cast<size_t>(C));
    std::vector<float> k(static_cast<size_t>(C * row)), v(k.size());
    for (int64_t r = 0; r < C; ++r) {
      pos[static_cast<size_t>(r)] = first + static_cast<int32_t>(r);
      for (int i = 0; i < row; ++i) {
        k[static_cast<size_t>(r * row + i)] = KeyValue(first + static_cast<int32_t>(r), i);
        v[static_cast<size_t>(r * row + i)] = -KeyValue(first + static_cast<int32_t>(r), i);
      }
    }
    return Append(ring, k.data(), v.data(), pos.data(), C);
  };
  auto check = [&](const KvView& view, int32_t last) {
    ASSERT_EQ(view.k, nullptr);
    ASSERT_NE(view.k16, nullptr);
    std::multiset<int32_t> held;
    for (int64_t s = 0; s < view.S; ++s) {
      const int32_t p = view.pos[s];
      if (p < 0) continue;
      held.insert(p);
      for (int i = 0; i < row; ++i) {
        EXPECT_EQ(view.k16[s * row + i], F32ToBf16(KeyValue(p, i))) << "position " << p;
        EXPECT_EQ(view.v16[s * row + i], F32ToBf16(-KeyValue(p, i))) << "position " << p;
      }
    }
    for (int32_t p = std::max(0, last - W + 1); p <= last; ++p) EXPECT_EQ(held.count(p), 1u) << p;
  };
  for (int32_t p = 0; p < 3; ++p) {
    auto view = append(p, 1);
    ASSERT_TRUE(view.ok());
    check(*view, p);
  }
  auto chunk = append(3, 7);  // longer than the window: the scratch holds 0..9
  ASSERT_TRUE(chunk.ok()) << chunk.status().ToString();
  EXPECT_EQ(chunk->S, W + 7);
  check(*chunk, 9);
  std::multiset<int32_t> all(chunk->pos, chunk->pos + chunk->S);
  for (int32_t p = 0; p <= 9; ++p) EXPECT_EQ(all.count(p), 1u) << p;
  auto next = append(10, 1);  // the ring itself after the chunk: 7..10
  ASSERT_TRUE(next.ok());
  check(*next, 10);
}

TEST(FullKvCacheTest, Bf16ArrayKeepsEveryEntryThroughGrowth) {
  FullKvCache cache(1, 3, /*block_size=*/4, /*max_positions=*/32, HostMemory(), KvDtype::kBF16);
  for (int32_t p = 0; p < 13; ++p) {  // grows to 4, 8, 12, 20: copies bf16 entries each time
    std::vector<float> k(3), v(3);
    for (int i = 0; i < 3; ++i) {
      k[i] = KeyValue(p, i);
      v[i] = -KeyValue(p, i);
    }
    auto view = Append(cache, k.data(), v.data(), &p, 1);
    ASSERT_TRUE(view.ok());
    ASSERT_EQ(view->k, nullptr);
    for (int32_t s = 0; s < view->S; ++s) {
      EXPECT_EQ(view->pos[s], s <= p ? s : -1);
      for (int i = 0; i < 3 && s <= p; ++i) {
        EXPECT_EQ(view->k16[s * 3 + i], F32ToBf16(KeyValue(s, i)));
        EXPECT_EQ(view->v16[s * 3 + i], F32ToBf16(-KeyValue(s, i)));
      }
      for (int i = 0; i < 3 && s > p; ++i) EXPECT_EQ(view->k16[s * 3 + i], 0) << "not zeroed";
    }
  }
  EXPECT_EQ(cache.bytes(), 20u * (2 * 3 * 2 + 4));
}

// q8 through growth: each copy to a larger array moves the blocks' scales with their values.
TEST(FullKvCacheTest, Q8ArrayKeepsEveryEntryAndItsScalesThroughGrowth) {
  const int row = 2 * kQ8Block;
  FullKvCache cache(2, kQ8Block, /*block_size=*/4, /*max_positions=*/32, HostMemory(),
                    KvDtype::kQ8);
  for (int32_t p = 0; p < 13; ++p) {  // grows to 4, 8, 12, 20
    std::vector<float> k(row), v(row);
    for (int i = 0; i < row; ++i) {
      k[i] = KeyValue(p, i);
      v[i] = -KeyValue(p, i) * (i < kQ8Block ? 1.0f : 0.01f);  // blocks of other scales
    }
    auto view = Append(cache, k.data(), v.data(), &p, 1);
    ASSERT_TRUE(view.ok());
    ASSERT_EQ(view->k, nullptr);
    ASSERT_NE(view->k8, nullptr);
    for (int32_t s = 0; s <= p; ++s) {
      ASSERT_EQ(view->pos[s], s);
      for (int i = 0; i < row; ++i) {
        const float ks = view->k_scale8[s * 2 + i / kQ8Block];
        const float vs = view->v_scale8[s * 2 + i / kQ8Block];
        const float want_v = -KeyValue(s, i) * (i < kQ8Block ? 1.0f : 0.01f);
        EXPECT_NEAR(ks * view->k8[s * row + i], KeyValue(s, i), 0.5f * ks + 1e-6f) << s;
        EXPECT_NEAR(vs * view->v8[s * row + i], want_v, 0.5f * vs + 1e-6f) << s;
      }
    }
  }
  EXPECT_EQ(cache.bytes(), 20u * (2 * (row + 2 * 4) + 4));
}

TEST(RingKvCacheTest, OutOfOrderPositionIsRefused) {
  RingKvCache ring(4, 1, 2);
  std::vector<float> k(2, 0.0f);
  int32_t p = 0;
  ASSERT_TRUE(Append(ring, k.data(), k.data(), &p, 1).ok());
  p = 2;  // skipping 1 would leave a slot whose position is not what the mask assumes
  const Status st = ring.Reserve(&p, 1);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("position 2 written where 1 was expected"));
  EXPECT_EQ(ring.next_pos(), 1);  // refused without a change
}

TEST(FullKvCacheTest, EntryPIsPositionPAndTheTailIsEmpty) {
  FullKvCache cache(2, 3, /*block_size=*/4, /*max_positions=*/20);
  const int row = 6;
  std::set<const float*> arrays;
  for (int32_t p = 0; p < 10; ++p) {
    std::vector<float> k = Row(row, static_cast<float>(p)), v = Row(row, 100.0f + p);
    auto view = Append(cache, k.data(), v.data(), &p, 1);
    ASSERT_TRUE(view.ok());
    ASSERT_EQ(view->S, cache.capacity());  // the whole array, a multiple of the block size
    ASSERT_EQ(view->S % 4, 0);
    arrays.insert(view->k);
    for (int32_t s = 0; s < view->S; ++s) {
      if (s > p) {
        EXPECT_EQ(view->pos[s], -1);
        continue;
      }
      EXPECT_EQ(view->pos[s], s);
      EXPECT_EQ(view->k[s * row + row - 1], static_cast<float>(s));
      EXPECT_EQ(view->v[s * row], 100.0f + s);
    }
  }
  // Grown by half again in whole blocks: 4, 8, 12 positions; three arrays, not ten.
  EXPECT_EQ(cache.num_blocks(), 3u);
  EXPECT_EQ(arrays.size(), 3u);
  std::vector<float> big(11 * row, 0.0f);
  std::vector<int32_t> pos(11);
  for (int i = 0; i < 11; ++i) pos[static_cast<size_t>(i)] = 10 + i;
  const Status full = cache.Reserve(pos.data(), 11);
  ASSERT_FALSE(full.ok());
  EXPECT_THAT(full.message(), HasSubstr("KV cache full"));
  EXPECT_EQ(cache.size(), 10);
}

TEST(FullKvCacheTest, ResetKeepsTheArrayAndEmptiesIt) {
  FullKvCache cache(1, 2, /*block_size=*/8, /*max_positions=*/64);
  std::vector<float> k = Row(2 * 5, 1.0f);
  const int32_t pos[] = {0, 1, 2, 3, 4};
  auto before = Append(cache, k.data(), k.data(), pos, 5);
  ASSERT_TRUE(before.ok());
  cache.Reset();
  auto after = Append(cache, k.data(), k.data(), pos, 2);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->k, before->k);
  for (int64_t s = 0; s < after->S; ++s) EXPECT_EQ(after->pos[s], s < 2 ? s : -1) << s;
}

TEST(SequenceKvCacheTest, E2bOnlyFifteenLayersOwnACache) {
  SyntheticOptions o;
  o.preset = "e2b";
  auto config = ParseGemma4Config(nlohmann::json::parse(SyntheticConfig(o)->dump()), nullptr);
  ASSERT_TRUE(config.ok());
  auto cache = SequenceKvCache::Create(KvLayouts(*config), 4096);
  ASSERT_TRUE(cache.ok()) << cache.status().ToString();
  EXPECT_EQ((*cache)->num_cached_layers(), 15);
  // 3 full layers, 1 KV head of 512, K and V in f32: 3 * 2 * 512 * 4 bytes per token.
  EXPECT_EQ((*cache)->bytes_per_token(), 3u * 2 * 512 * 4);
  // 12 sliding rings of 512 slots, 1 KV head of 256: the window, not the context.
  EXPECT_EQ((*cache)->ring_bytes(), 12u * 512 * 2 * 256 * 4);
  EXPECT_EQ((*cache)->reserved_bytes(), (*cache)->ring_bytes() + 4096u * (*cache)->bytes_per_token());
  EXPECT_THAT((*cache)->Describe(), HasSubstr("15 of 35 layers"));
  EXPECT_THAT((*cache)->Describe(), HasSubstr("; f32;"));
  // A context off a block boundary reserves the whole last block the full layers would allocate.
  auto odd = SequenceKvCache::Create(KvLayouts(*config), 4097, HostMemory(), KvDtype::kF32, 16);
  ASSERT_TRUE(odd.ok());
  EXPECT_EQ((*odd)->reserved_bytes(), (*odd)->ring_bytes() + 4112u * (*odd)->bytes_per_token());
  EXPECT_FALSE(SequenceKvCache::Create(KvLayouts(*config), 0).ok());  // no room at all
  // bf16: half of every figure.
  auto half = SequenceKvCache::Create(KvLayouts(*config), 4096, HostMemory(), KvDtype::kBF16);
  ASSERT_TRUE(half.ok());
  EXPECT_EQ((*half)->kv_dtype(), KvDtype::kBF16);
  EXPECT_EQ((*half)->bytes_per_token(), 3u * 2 * 512 * 2);
  EXPECT_EQ((*half)->ring_bytes(), 12u * 512 * 2 * 256 * 2);
  EXPECT_THAT((*half)->Describe(), HasSubstr("; bf16; 6144 B/token"));
  // q8: a byte per value plus an f32 scale per 32 values.
  auto q8 = SequenceKvCache::Create(KvLayouts(*config), 4096, HostMemory(), KvDtype::kQ8);
  ASSERT_TRUE(q8.ok());
  EXPECT_EQ((*q8)->bytes_per_token(), 3u * 2 * (512 + 16 * 4));
  EXPECT_EQ((*q8)->ring_bytes(), 12u * 512 * 2 * (256 + 8 * 4));
  EXPECT_THAT((*q8)->Describe(), HasSubstr("; q8; 3456 B/token"));
}

// q8 stores whole blocks of 32 per head: a head of another size is refused up front, naming the
// layer, not rounded into its neighbour's block.
TEST(SequenceKvCacheTest, Q8RefusesHeadsThatAreNotWholeBlocks) {
  SyntheticOptions o;
  o.preset = "tiny";  // head_dim 16
  auto config = ParseGemma4Config(nlohmann::json::parse(SyntheticConfig(o)->dump()), nullptr);
  ASSERT_TRUE(config.ok());
  auto c = SequenceKvCache::Create(KvLayouts(*config), 64, HostMemory(), KvDtype::kQ8);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("has head_dim 16"));
  EXPECT_THAT(c.status().message(), HasSubstr("multiple of 32"));
}

// Prefix reuse without copies: a cache sharing another's first n positions holds its blocks (the
// pool hands out none), and whichever writes into a shared block first takes a copy of what it
// holds there; the other keeps reading its own values. A reset or truncation behind a shared
// block writes a copy too. Dropping a cache frees only the blocks no one else holds.
TEST(FullKvCacheTest, SharedBlocksAreCopiedByTheirFirstWriter) {
  const int row = 2;
  FullKvCache a(1, row, /*block_size=*/4, /*max_positions=*/64);
  // Position p holds sign * (p + 1) in every value: a's +, b's -.
  auto append = [&](FullKvCache& c, int32_t p, float sign) {
    const std::vector<float> k = Row(row, sign * static_cast<float>(p + 1));
    return Append(c, k.data(), k.data(), &p, 1);
  };
  // The positions c's view sees, each with its first K value.
  auto held = [&](const KvView& v) {
    std::map<int32_t, float> m;
    for (int64_t s = 0; s < v.S; ++s) {
      if (v.pos[s] >= 0) m[v.pos[s]] = v.k[KvEntry(v.block_table, v.block_size, s) * row];
    }
    return m;
  };
  auto expect = [&](const KvView& v, int32_t n, int32_t own_from, float own_sign) {
    const std::map<int32_t, float> m = held(v);
    ASSERT_EQ(m.size(), static_cast<size_t>(n));
    for (const auto& [p, value] : m) {
      EXPECT_EQ(value, (p >= own_from ? own_sign : 1.0f) * static_cast<float>(p + 1)) << p;
    }
  };
  for (int32_t p = 0; p < 10; ++p) ASSERT_TRUE(append(a, p, 1.0f).ok());
  const KvBlockPool& pool = a.pool();
  ASSERT_EQ(pool.used(), 3);  // 10 positions: capacity 12
  {
    FullKvCache b(1, row, 4, 64);
    ASSERT_TRUE(b.ShareFrom(a, 6).ok());
    EXPECT_EQ(&b.pool(), &pool);
    EXPECT_EQ(b.num_blocks(), 2u);
    EXPECT_EQ(pool.used(), 3) << "shared, not copied";
    // b writes 6 and 7 into the block it shares with a (positions 4..7): a copy of 4 and 5.
    ASSERT_TRUE(append(b, 6, -1.0f).ok());
    auto bv = append(b, 7, -1.0f);
    ASSERT_TRUE(bv.ok());
    EXPECT_EQ(pool.used(), 4);
    expect(*bv, 8, 6, -1.0f);
    auto av = append(a, 10, 1.0f);  // a's own block 2: nothing copied
    ASSERT_TRUE(av.ok());
    EXPECT_EQ(pool.used(), 4);
    expect(*av, 11, 11, 1.0f);
    // a goes back to 2 and rewrites 2 and 3 in block 0, which b holds too.
    ASSERT_TRUE(a.Truncate(2).ok());
    ASSERT_TRUE(append(a, 2, -1.0f).ok());
    av = append(a, 3, -1.0f);
    ASSERT_TRUE(av.ok());
    EXPECT_EQ(pool.used(), 5);
    expect(*av, 4, 2, -1.0f);
    bv = append(b, 8, -1.0f);
    ASSERT_TRUE(bv.ok());
    expect(*bv, 9, 6, -1.0f);  // still a's 0..5 as they were
  }
  EXPECT_EQ(pool.used(), 3) << "b's blocks freed, a's kept";
  // A reset shares nothing now: a keeps its blocks and its table.
  a.Reset();
  auto again = append(a, 0, 1.0f);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(pool.used(), 3);
  expect(*again, 1, 1, 1.0f);
}

// The tiny preset's layers in one bf16 (or q8: sliding heads of 32) cache of 64 positions,
// each K/V value its position.
struct TinyCache {
  explicit TinyCache(KvDtype dtype = KvDtype::kBF16,
                     int block_size = SequenceKvCache::kDefaultBlockSize)
      : dtype(dtype) {
    SyntheticOptions o;
    o.preset = "tiny";
    if (dtype == KvDtype::kQ8) o.head_dim = 32;
    auto config = ParseGemma4Config(nlohmann::json::parse(SyntheticConfig(o)->dump()), nullptr);
    EXPECT_TRUE(config.ok());
    layouts = KvLayouts(*config);
    auto c = SequenceKvCache::Create(layouts, 64, HostMemory(), dtype, block_size);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    cache = std::move(*c);
  }
  // The first value of slot s's K in a view of `row` values an entry, as stored (a full
  // layer's through its block table).
  float FirstKey(const KvView& view, int64_t s, int64_t row) const {
    const int64_t e = KvEntry(view.block_table, view.block_size, s);
    if (dtype == KvDtype::kQ8) return view.k_scale8[e * row / kQ8Block] * view.k8[e * row];
    return Bf16ToF32(view.k16[e * row]);
  }
  int64_t RowOf(int layer) const {
    const KvLayout& l = layouts[static_cast<size_t>(layer)];
    return static_cast<int64_t>(l.n_kv_heads) * l.head_dim;
  }
  // Appends positions [from, to) to every layer that owns K/V of `c`.
  void Append(SequenceKvCache& c, int32_t from, int32_t to) const {
    for (int32_t p = from; p < to; ++p) {
      ASSERT_TRUE(c.Reserve(&p, 1).ok());
      for (const KvLayout& l : layouts) {
        if (l.shared()) continue;
        const std::vector<float> k = Row(static_cast<int>(RowOf(l.index)), static_cast<float>(p));
        ASSERT_TRUE(c.Write(HostWrite(), l.index, k.data(), k.data(), &p, 1).ok());
      }
    }
  }
  // Reserves c's next position and checks every layer's view after writing it: exactly the
  // positions [0, next) the layer can see (a ring its last window), each holding its value.
  void ExpectHolds(SequenceKvCache& c, int32_t next) const {
    ASSERT_EQ(c.size(), next);
    ASSERT_TRUE(c.Reserve(&next, 1).ok());
    for (const KvLayout& l : layouts) {
      if (l.shared()) continue;
      const int64_t row = RowOf(l.index);
      const std::vector<float> k = Row(static_cast<int>(row), static_cast<float>(next));
      auto view = c.Write(HostWrite(), l.index, k.data(), k.data(), &next, 1);
      ASSERT_TRUE(view.ok());
      std::map<int32_t, float> m;
      for (int64_t s = 0; s < view->S; ++s) {
        if (view->pos[s] >= 0 && view->pos[s] != next) {
          m[view->pos[s]] = FirstKey(*view, s, row);
        }
      }
      const int32_t first = l.sliding() ? std::max(0, next + 1 - l.window) : 0;
      ASSERT_EQ(m.size(), static_cast<size_t>(next - first)) << "layer " << l.index;
      for (const auto& [pos, value] : m) {
        EXPECT_GE(pos, first);
        // q8 stores p as 127 * (p / 127): exact in bf16 (p < 64), within an f32 rounding in q8.
        EXPECT_NEAR(value, static_cast<float>(pos), 1e-5f * pos) << "layer " << l.index;
      }
    }
  }

  KvDtype dtype;
  std::vector<KvLayout> layouts;
  std::unique_ptr<SequenceKvCache> cache;
};

// Prefix reuse: a snapshot puts the rings back where they were (their older positions cannot be
// rebuilt otherwise) and truncates the full layers; the sequence then continues from there.
class SequenceKvCacheDtypeTest : public ::testing::TestWithParam<KvDtype> {};

INSTANTIATE_TEST_SUITE_P(Dtypes, SequenceKvCacheDtypeTest,
                         ::testing::Values(KvDtype::kBF16, KvDtype::kQ8),
                         [](const auto& info) { return std::string(KvDtypeName(info.param)); });

TEST_P(SequenceKvCacheDtypeTest, SnapshotRestoresTheRingsAndTruncatesTheFullLayers) {
  TinyCache t(GetParam());
  SequenceKvCache& cache = *t.cache;
  t.Append(cache, 0, 21);
  auto snap = cache.Snapshot();
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ((*snap)->size(), 21);
  EXPECT_GT((*snap)->bytes(), 0u);
  t.Append(cache, 21, 40);
  EXPECT_FALSE(cache.CanTruncate(21));
  EXPECT_FALSE(cache.Truncate(21).ok()) << "the rings have moved past 21";
  ASSERT_TRUE(cache.Restore(**snap).ok());
  // Every layer holds exactly what it held at 21 (the values of 21..39 are gone from the view).
  t.ExpectHolds(cache, 21);
}

// A copy holds what the cache holds and goes its own way; rings that have not wrapped keep
// any prefix, so both truncate there (the window is 8).
TEST_P(SequenceKvCacheDtypeTest, CloneAndTruncateWhileTheRingsHaveNotWrapped) {
  TinyCache t(GetParam());
  SequenceKvCache& cache = *t.cache;
  t.Append(cache, 0, 6);
  auto copy = cache.Clone(6);
  ASSERT_TRUE(copy.ok()) << copy.status().ToString();
  EXPECT_NE((*copy)->storage_id(), cache.storage_id());
  EXPECT_EQ((*copy)->size(), 6);
  auto at6 = cache.Snapshot();  // of the slots in use only
  ASSERT_TRUE(at6.ok());
  t.Append(cache, 6, 20);  // the original moves on and wraps; the copy is untouched
  auto at20 = cache.Snapshot();
  ASSERT_TRUE(at20.ok());
  EXPECT_LT((*at6)->bytes(), (*at20)->bytes());
  t.ExpectHolds(**copy, 6);
  ASSERT_TRUE((*copy)->Truncate(3).ok());
  t.ExpectHolds(**copy, 3);  // and continues from 3
  t.Append(**copy, 4, 12);
  t.ExpectHolds(**copy, 12);
  // The original, wrapped: only its own size, and a copy of it holds the same.
  EXPECT_FALSE(cache.CanTruncate(15));
  EXPECT_TRUE(cache.CanTruncate(20));
  auto again = cache.Clone(20);
  ASSERT_TRUE(again.ok());
  t.ExpectHolds(**again, 20);
  t.ExpectHolds(cache, 20);
  ASSERT_TRUE(cache.Restore(**at6).ok());  // the wrapped rings back to their first 6 slots
  t.ExpectHolds(cache, 6);
}

// A copy at a prefix: from a snapshot there once the rings have wrapped, truncated while they
// have not. The full layers copy only the prefix's blocks; a point with neither is refused.
TEST_P(SequenceKvCacheDtypeTest, CloneOfAPrefixHoldsItsStateAndOnlyItsBlocks) {
  TinyCache t(GetParam(), /*block_size=*/4);
  SequenceKvCache& cache = *t.cache;
  t.Append(cache, 0, 6);
  auto at6 = cache.Snapshot();
  ASSERT_TRUE(at6.ok());
  t.Append(cache, 6, 30);  // the rings (window 8) wrap
  ASSERT_FALSE(cache.CanTruncate(6));
  auto copy = cache.Clone(6, at6->get());
  ASSERT_TRUE(copy.ok()) << copy.status().ToString();
  size_t full = 0;
  for (const KvLayout& l : t.layouts) full += !l.shared() && !l.sliding();
  ASSERT_GT(full, 0u);
  EXPECT_EQ((*copy)->num_blocks(), 2 * full);  // 6 positions: 2 blocks of 4 a layer
  EXPECT_GE(cache.num_blocks(), 8 * full);     // 30: at least 8
  t.ExpectHolds(**copy, 6);
  t.Append(**copy, 7, 12);  // it continues from there
  t.ExpectHolds(**copy, 12);
  t.ExpectHolds(cache, 30);  // the original is untouched
  EXPECT_FALSE(cache.Clone(5, at6->get()).ok()) << "a snapshot of another point";
  auto none = cache.Clone(6);
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(none.status().message(), HasSubstr("use a snapshot"));
  EXPECT_FALSE(cache.Clone(40).ok()) << "past the cache";
  // Rings that have not wrapped: any prefix, truncated.
  TinyCache u(GetParam(), 4);
  u.Append(*u.cache, 0, 7);
  auto head = u.cache->Clone(2);
  ASSERT_TRUE(head.ok()) << head.status().ToString();
  t.ExpectHolds(**head, 2);
}

TEST(SequenceKvCacheTest, StorageIdChangesExactlyWhenAViewWouldMove) {
  SyntheticOptions o;
  o.preset = "tiny";
  auto config = ParseGemma4Config(nlohmann::json::parse(SyntheticConfig(o)->dump()), nullptr);
  ASSERT_TRUE(config.ok());
  auto a = SequenceKvCache::Create(KvLayouts(*config), 64, HostMemory(), KvDtype::kF32,
                                   /*block_size=*/4);
  auto b = SequenceKvCache::Create(KvLayouts(*config), 64, HostMemory(), KvDtype::kF32, 4);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE((*a)->storage_id(), (*b)->storage_id());  // unique across caches
  std::set<uint64_t> ids = {(*a)->storage_id()};
  std::set<const float*> full_arrays;
  int changes = 0;
  for (int32_t p = 0; p < 40; ++p) {
    const uint64_t id = (*a)->storage_id();
    ASSERT_TRUE((*a)->Reserve(&p, 1).ok());
    if ((*a)->storage_id() != id) {
      ++changes;
      EXPECT_TRUE(ids.insert((*a)->storage_id()).second);  // never an earlier value
    }
  }
  // The rings' allocation at position 0, the full layers' growth to 4, 8, 12, 20, 32, 48.
  EXPECT_EQ(changes, 6);
  (*a)->Reset();
  const uint64_t id = (*a)->storage_id();
  const int32_t zero = 0;
  ASSERT_TRUE((*a)->Reserve(&zero, 1).ok());
  EXPECT_EQ((*a)->storage_id(), id);  // a reset keeps every buffer
  const int32_t two = 2;
  EXPECT_FALSE((*a)->Reserve(&two, 1).ok());  // out of order
}

}  // namespace
}  // namespace g4
