// KvWrite (ops/kv_write.h) on every backend (op_backend.h) against its contract written out: odd
// row sizes (smaller and larger than a CUDA block's threads), a ring that wraps (window 8),
// full-attention slots (window 0), a paged cache whose slots' rows are where a block table puts
// them (ops/kv_blocks.h), and skipped rows (a negative position, a slot past the capacity). The
// caches start random with positions 1000 + slot, so a slot written by mistake, or one left
// unwritten, shows. A copy: the results are bit for bit.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/op_backend.h"
#include "kernels/test_util.h"
#include "ops/kv_blocks.h"

namespace g4::testing {

struct KvCase {
  std::string name;
  int64_t row, capacity;
  int32_t window;
  std::vector<int32_t> pos;
  int32_t block = 0;           // paged: slots in blocks of `block` ...
  std::vector<int32_t> table = {};  // ... at these blocks of the K/V arrays (capacity / block)

  // Rows of the K/V arrays: the slots, or up to the end of the highest block of the table.
  int64_t entries() const {
    return KvEntries(table.empty() ? nullptr : table.data(), block, capacity);
  }
  // Where slot's K/V row is (ops/kv_blocks.h, written out).
  int64_t entry(int64_t slot) const {
    return table.empty() ? slot : int64_t{table[slot / block]} * block + slot % block;
  }
};

inline std::vector<KvCase> KvCases() {
  return {
      {"window 0, row 37", 37, 20, 0, {3, 4, 5, 6, 7}},
      {"ring wraps, row 301", 301, 8, 8, {6, 7, 8, 9, 10, 11}},
      {"ring, row 1, one row", 1, 8, 8, {13}},
      // -1: skipped; 25 >= capacity 20: skipped; the rest written.
      {"skipped rows, row 129", 129, 20, 0, {-1, 2, 25, 19, -7, 0}},
      // A ring over fewer slots than its window (capacity 5, window 8): slots 5..7 skipped.
      {"ring past capacity, row 64", 64, 5, 8, {4, 5, 6, 7, 8}},
      // 4 blocks of 3 slots among 6 in the arrays; 12 >= capacity: skipped.
      {"paged, row 45", 45, 12, 0, {2, 3, 4, 10, 12, 7}, 3, {5, 0, 3, 1}},
  };
}

struct KvCaches {
  std::vector<float> k, v;
  std::vector<int32_t> pos;
};

inline KvCaches KvInitial(const KvCase& c, uint32_t seed) {
  KvCaches h;
  h.k = RandomFloats(c.entries() * c.row, seed);
  h.v = RandomFloats(c.entries() * c.row, seed + 1);
  for (int64_t s = 0; s < c.capacity; ++s) h.pos.push_back(static_cast<int32_t>(1000 + s));
  return h;
}

// The contract of ops/kv_write.h, written out.
inline void KvExpected(const KvCase& c, const std::vector<float>& k, const std::vector<float>& v,
                       KvCaches* h) {
  for (size_t r = 0; r < c.pos.size(); ++r) {
    const int32_t p = c.pos[r];
    if (p < 0) continue;
    const int64_t slot = c.window > 0 ? p % c.window : p;
    if (slot >= c.capacity) continue;
    const int64_t e = c.entry(slot);
    for (int64_t i = 0; i < c.row; ++i) {
      h->k[static_cast<size_t>(e * c.row + i)] = k[r * static_cast<size_t>(c.row) + i];
      h->v[static_cast<size_t>(e * c.row + i)] = v[r * static_cast<size_t>(c.row) + i];
    }
    h->pos[static_cast<size_t>(slot)] = p;
  }
}

// One case's chunk (k, v: [C, row]), the caches it starts from, and what the write must leave.
struct KvRun {
  std::vector<float> k, v;
  KvCaches start, want;
  KvRun(const KvCase& c, uint32_t* seed) {
    const int64_t C = static_cast<int64_t>(c.pos.size());
    k = RandomFloats(C * c.row, ++*seed);
    v = RandomFloats(C * c.row, ++*seed);
    start = want = KvInitial(c, ++*seed);
    KvExpected(c, k, v, &want);
  }
};

// The op's arguments for case c over k, v, the caches kc, vc, pc and c's block table (host or
// device pointers alike; table null where c has none).
inline KvWriteArgs KvArgs(const KvCase& c, const float* kp, const float* vp, const int32_t* pos,
                          float* kc, float* vc, int32_t* pc, const int32_t* table) {
  KvWriteArgs a;
  a.k = kp, a.v = vp, a.pos = pos;
  a.C = static_cast<int64_t>(c.pos.size()), a.row = c.row, a.window = c.window;
  a.capacity = c.capacity;
  a.k_cache = kc, a.v_cache = vc, a.pos_cache = pc;
  a.block_table = table, a.block_size = c.block;
  return a;
}

class KvWriteTest : public OpBackendTest {};

TEST_P(KvWriteTest, MatchesTheContract) {
  uint32_t seed = 700;
  for (const KvCase& c : KvCases()) {
    SCOPED_TRACE(c.name);
    const KvRun run(c, &seed);
    KvCaches h = run.start;
    ops().kv_write(pool(), KvArgs(c, run.k.data(), run.v.data(), c.pos.data(), h.k.data(),
                                  h.v.data(), h.pos.data(),
                                  c.table.empty() ? nullptr : c.table.data()));
    EXPECT_EQ(h.k, run.want.k);
    EXPECT_EQ(h.v, run.want.v);
    EXPECT_EQ(h.pos, run.want.pos);
  }
}

}  // namespace g4::testing
