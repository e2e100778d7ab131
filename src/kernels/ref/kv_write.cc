#include <cstring>

#include "core/dtype.h"
#include "core/q8_blocks.h"
#include "kernels/ref/kernels.h"
#include "ops/kv_blocks.h"

namespace g4::ref {

void KvWrite(ThreadPool&, const KvWriteArgs& a) {
  const size_t row_bytes = static_cast<size_t>(a.row) * sizeof(float);
  for (int64_t r = 0; r < a.C; ++r) {
    const int32_t p = a.pos[r];
    if (p < 0) continue;
    const int64_t slot = a.window > 0 ? p % a.window : p - a.base;
    if (slot < 0 || slot >= a.capacity) continue;
    const int64_t e = KvEntry(a.block_table, a.block_size, slot);
    const float* k = a.k + r * a.row;
    const float* v = a.v + r * a.row;
    if (a.k_cache16 != nullptr) {
      uint16_t* kd = a.k_cache16 + e * a.row;
      uint16_t* vd = a.v_cache16 + e * a.row;
      for (int64_t i = 0; i < a.row; ++i) {
        kd[i] = F32ToBf16(k[i]);
        vd[i] = F32ToBf16(v[i]);
      }
    } else if (a.k_cache8 != nullptr) {
      const int64_t blocks = a.row / kQ8Block;
      QuantizeQ8Blocks(k, a.row, a.k_cache8 + e * a.row, a.k_scale8 + e * blocks, nullptr);
      QuantizeQ8Blocks(v, a.row, a.v_cache8 + e * a.row, a.v_scale8 + e * blocks, nullptr);
    } else {
      std::memcpy(a.k_cache + e * a.row, k, row_bytes);
      std::memcpy(a.v_cache + e * a.row, v, row_bytes);
    }
    a.pos_cache[slot] = p;
  }
}

}  // namespace g4::ref
