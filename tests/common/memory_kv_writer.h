// MemoryKvWriter: the KvWrite contract (ops/kv_write.h) carried out only through a Memory's
// Download / Copy / Upload, so KV caches in a Memory the host cannot read (ProtectedMemory)
// can be written in tests the way a device kernel writes them.
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "model/kv_store.h"

namespace g4::testing {

inline KvWriter MemoryKvWriter(Memory& m) {
  return [&m](const KvWriteArgs& a) {
    std::vector<int32_t> pos(static_cast<size_t>(a.C));
    ASSERT_TRUE(m.Download(pos.data(), a.pos, pos.size() * sizeof(int32_t)).ok());
    const size_t row = static_cast<size_t>(a.row) * sizeof(float);
    for (int64_t r = 0; r < a.C; ++r) {
      const int32_t p = pos[static_cast<size_t>(r)];
      const int64_t slot = a.window > 0 ? p % a.window : p;
      if (p < 0 || slot >= a.capacity) continue;
      ASSERT_TRUE(m.Copy(a.k_cache + slot * a.row, a.k + r * a.row, row).ok());
      ASSERT_TRUE(m.Copy(a.v_cache + slot * a.row, a.v + r * a.row, row).ok());
      ASSERT_TRUE(m.Upload(a.pos_cache + slot, &p, sizeof(int32_t)).ok());
    }
  };
}

}  // namespace g4::testing
