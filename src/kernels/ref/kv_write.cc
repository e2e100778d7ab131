#include <cstring>

#include "kernels/ref/kernels.h"

namespace g4::ref {

void KvWrite(ThreadPool&, const KvWriteArgs& a) {
  const size_t row_bytes = static_cast<size_t>(a.row) * sizeof(float);
  for (int64_t r = 0; r < a.C; ++r) {
    const int32_t p = a.pos[r];
    if (p < 0) continue;
    const int64_t slot = a.window > 0 ? p % a.window : p;
    if (slot >= a.capacity) continue;
    std::memcpy(a.k_cache + slot * a.row, a.k + r * a.row, row_bytes);
    std::memcpy(a.v_cache + slot * a.row, a.v + r * a.row, row_bytes);
    a.pos_cache[slot] = p;
  }
}

}  // namespace g4::ref
