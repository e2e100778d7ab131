// The KvWrite cases (kv_write_test.h) on the CPU backend's table, and g4::ref::KvWrite (the ref
// and CPU backends' KvWrite, ops/kv_write.h) by hand: slots from positions, ring wrap, skipped
// rows, nothing written outside the slots it names; bf16 caches (each value rounded as
// g4::F32ToBf16), q8 caches (each row's blocks as g4::QuantizeQ8Blocks) and a base position
// (slot = position - base).

#include <cstdint>
#include <vector>

#include "core/dtype.h"
#include "core/q8_blocks.h"
#include "gtest/gtest.h"
#include "kernels/kv_write_test.h"
#include "kernels/ref/kernels.h"

namespace g4 {
namespace testing {

INSTANTIATE_TEST_SUITE_P(Cpu, KvWriteTest, ::testing::ValuesIn(CpuOpBackends()), OpBackendName);

}  // namespace testing

namespace {

struct Cache {
  Cache(int64_t capacity, int64_t row)
      : k(static_cast<size_t>(capacity * row), -7.0f),
        v(k.size(), -8.0f),
        pos(static_cast<size_t>(capacity), -1) {}
  std::vector<float> k, v;
  std::vector<int32_t> pos;
};

// Row r of a chunk: k = 1000 * r + i, v = -(1000 * r + i).
void MakeChunk(int64_t C, int64_t row, std::vector<float>* k, std::vector<float>* v) {
  k->resize(static_cast<size_t>(C * row));
  v->resize(k->size());
  for (int64_t r = 0; r < C; ++r) {
    for (int64_t i = 0; i < row; ++i) {
      (*k)[static_cast<size_t>(r * row + i)] = static_cast<float>(1000 * r + i);
      (*v)[static_cast<size_t>(r * row + i)] = -static_cast<float>(1000 * r + i);
    }
  }
}

// A KvWrite of the chunk k, v at positions pos into a cache of `capacity` slots (ring of
// `window` slots, or slot = position - base); the caller points it at the cache's arrays.
KvWriteArgs ChunkArgs(const std::vector<float>& k, const std::vector<float>& v,
                      const std::vector<int32_t>& pos, int64_t row, int32_t window, int64_t base,
                      int64_t capacity, std::vector<int32_t>* pos_cache) {
  KvWriteArgs a;
  a.k = k.data();
  a.v = v.data();
  a.pos = pos.data();
  a.C = static_cast<int64_t>(pos.size());
  a.row = row;
  a.window = window;
  a.base = base;
  a.capacity = capacity;
  a.pos_cache = pos_cache->data();
  return a;
}

// ChunkArgs into the f32 cache c.
KvWriteArgs Args(const std::vector<float>& k, const std::vector<float>& v,
                 const std::vector<int32_t>& pos, int64_t row, int32_t window, Cache* c) {
  KvWriteArgs a =
      ChunkArgs(k, v, pos, row, window, /*base=*/0, static_cast<int64_t>(c->pos.size()), &c->pos);
  a.k_cache = c->k.data();
  a.v_cache = c->v.data();
  return a;
}

TEST(KvWriteRef, RingSlotsArePositionsModuloTheWindow) {
  ThreadPool pool(1);
  const int64_t row = 13, W = 5;
  Cache c(W, row);
  std::vector<float> k, v;
  const std::vector<int32_t> pos = {8, 9, 10};  // slots 3, 4, 0
  MakeChunk(3, row, &k, &v);
  ref::KvWrite(pool, Args(k, v, pos, row, static_cast<int32_t>(W), &c));
  EXPECT_EQ(c.pos, (std::vector<int32_t>{10, -1, -1, 8, 9}));
  const int64_t slot_of_row[] = {3, 4, 0};
  for (int64_t r = 0; r < 3; ++r) {
    for (int64_t i = 0; i < row; ++i) {
      EXPECT_EQ(c.k[static_cast<size_t>(slot_of_row[r] * row + i)], 1000 * r + i);
      EXPECT_EQ(c.v[static_cast<size_t>(slot_of_row[r] * row + i)], -(1000 * r + i));
    }
  }
  for (int64_t slot : {1, 2}) {  // untouched
    for (int64_t i = 0; i < row; ++i) EXPECT_EQ(c.k[static_cast<size_t>(slot * row + i)], -7.0f);
  }
}

TEST(KvWriteRef, FullLayerSlotIsThePositionAndOutOfRangeRowsAreSkipped) {
  ThreadPool pool(1);
  const int64_t row = 4, capacity = 6;
  Cache c(capacity, row);
  std::vector<float> k, v;
  const std::vector<int32_t> pos = {4, 5, 6, -1};  // 6 is past the capacity, -1 is padding
  MakeChunk(4, row, &k, &v);
  ref::KvWrite(pool, Args(k, v, pos, row, 0, &c));
  EXPECT_EQ(c.pos, (std::vector<int32_t>{-1, -1, -1, -1, 4, 5}));
  EXPECT_EQ(c.k[4 * row], 0.0f);
  EXPECT_EQ(c.v[5 * row + 3], -1003.0f);
  for (size_t i = 0; i < static_cast<size_t>(4 * row); ++i) EXPECT_EQ(c.k[i], -7.0f);
}

// bf16 storage: every value rounded to nearest even, the same slots as f32; with window 0 a
// base moves slot 0 to that position (the ring's chunk scratch), and rows before it are skipped.
TEST(KvWriteRef, Bf16CacheRoundsEachValueAndBaseShiftsTheSlots) {
  ThreadPool pool(1);
  const int64_t row = 5, capacity = 4;
  std::vector<float> k, v;
  const std::vector<int32_t> pos = {9, 10, 11, 12, 14};  // 9 is before base 10, 14 past the end
  MakeChunk(5, row, &k, &v);
  for (size_t i = 0; i < k.size(); ++i) k[i] += 0.00390625f * static_cast<float>(i % 3);  // 2^-8
  std::vector<uint16_t> kc(static_cast<size_t>(capacity * row), 0x7fc0);  // NaN until written
  std::vector<uint16_t> vc(kc.size(), 0x7fc0);
  std::vector<int32_t> pc(static_cast<size_t>(capacity), -1);
  KvWriteArgs a = ChunkArgs(k, v, pos, row, /*window=*/0, /*base=*/10, capacity, &pc);
  a.k_cache16 = kc.data();
  a.v_cache16 = vc.data();
  ref::KvWrite(pool, a);
  EXPECT_EQ(pc, (std::vector<int32_t>{10, 11, 12, -1}));
  for (int64_t slot = 0; slot < 3; ++slot) {
    for (int64_t i = 0; i < row; ++i) {
      const size_t src = static_cast<size_t>((slot + 1) * row + i);  // chunk row slot + 1
      const size_t dst = static_cast<size_t>(slot * row + i);
      EXPECT_EQ(kc[dst], F32ToBf16(k[src])) << "slot " << slot << " i " << i;
      EXPECT_EQ(vc[dst], F32ToBf16(v[src]));
    }
  }
  // Slot 0 got 1000 + 2^-7, which bf16 (8 significant bits) rounds to 1000.
  EXPECT_EQ(k[static_cast<size_t>(row)], 1000.0f + 0.0078125f);
  EXPECT_EQ(Bf16ToF32(kc[0]), 1000.0f);
  for (size_t i = 3 * row; i < kc.size(); ++i) EXPECT_EQ(kc[i], 0x7fc0);  // slot 3 untouched
}

// q8 storage: each row of two blocks quantized as QuantizeQ8Blocks (int8 values and one scale
// per block of 32), in the slot the ring gives its position; an untouched slot keeps its bytes,
// and every stored value is within half a step (scale / 2) of the original.
TEST(KvWriteRef, Q8CacheStoresEachRowsBlocksInItsSlot) {
  ThreadPool pool(1);
  const int64_t row = 2 * kQ8Block, capacity = 4, blocks = row / kQ8Block;
  std::vector<float> k, v;
  const std::vector<int32_t> pos = {5, 6, 7};  // window 4: slots 1, 2, 3
  MakeChunk(3, row, &k, &v);
  for (size_t i = 0; i < k.size(); ++i) k[i] *= 0.001f * static_cast<float>(i % 7);
  std::vector<int8_t> kc(static_cast<size_t>(capacity * row), 99), vc(kc.size(), 99);
  std::vector<float> ks(static_cast<size_t>(capacity * blocks), -1.0f), vs(ks.size(), -1.0f);
  std::vector<int32_t> pc(static_cast<size_t>(capacity), -1);
  KvWriteArgs a = ChunkArgs(k, v, pos, row, /*window=*/4, /*base=*/0, capacity, &pc);
  a.k_cache8 = kc.data();
  a.v_cache8 = vc.data();
  a.k_scale8 = ks.data();
  a.v_scale8 = vs.data();
  ref::KvWrite(pool, a);
  EXPECT_EQ(pc, (std::vector<int32_t>{-1, 5, 6, 7}));
  for (int64_t r = 0; r < 3; ++r) {
    const int64_t slot = r + 1;
    std::vector<int8_t> want(static_cast<size_t>(row));
    std::vector<float> scale(static_cast<size_t>(blocks));
    QuantizeQ8Blocks(k.data() + r * row, row, want.data(), scale.data(), nullptr);
    for (int64_t i = 0; i < row; ++i) {
      const size_t at = static_cast<size_t>(slot * row + i);
      EXPECT_EQ(kc[at], want[static_cast<size_t>(i)]) << "slot " << slot << " i " << i;
      const float back = ks[static_cast<size_t>(slot * blocks + i / kQ8Block)] * kc[at];
      EXPECT_NEAR(back, k[static_cast<size_t>(r * row + i)],
                  0.5f * ks[static_cast<size_t>(slot * blocks + i / kQ8Block)] + 1e-6f);
      const float vback = vs[static_cast<size_t>(slot * blocks + i / kQ8Block)] * vc[at];
      EXPECT_NEAR(vback, v[static_cast<size_t>(r * row + i)],
                  0.5f * vs[static_cast<size_t>(slot * blocks + i / kQ8Block)] + 1e-6f);
    }
    for (int64_t b = 0; b < blocks; ++b) {
      EXPECT_EQ(ks[static_cast<size_t>(slot * blocks + b)], scale[static_cast<size_t>(b)]);
    }
  }
  for (int64_t i = 0; i < row; ++i) EXPECT_EQ(kc[static_cast<size_t>(i)], 99);  // slot 0
  EXPECT_EQ(ks[0], -1.0f);
  EXPECT_EQ(vs[1], -1.0f);
}

}  // namespace
}  // namespace g4
