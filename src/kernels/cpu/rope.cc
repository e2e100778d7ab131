// RoPE on the CPU: ref::Rope's arithmetic (angles, cos and sin in f64, the same roundings), with
// the cos/sin of a call kept for the next call at the same positions and frequencies. A forward
// pass ropes q and k of every layer at one set of positions with one inv_freq per layer type (the
// 270M: 36 calls, 2 distinct tables), and the ref kernel's sincos per call and pair was 6% of a
// 41-token prefill, on one thread.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/cpu/kernels.h"

namespace g4::cpu {
namespace {

// cos and sin of positions[t] * inv_freq[j]: cs[(t * half + j) * 2 + {0, 1}].
struct RopeTable {
  std::vector<int32_t> positions;
  std::vector<float> inv_freq;
  std::vector<double> cs;

  bool Holds(const int32_t* pos, int64_t T, const float* freq, int64_t half) const {
    return static_cast<int64_t>(positions.size()) == T &&
           static_cast<int64_t>(inv_freq.size()) == half &&
           std::equal(positions.begin(), positions.end(), pos) &&
           std::memcmp(inv_freq.data(), freq, static_cast<size_t>(half) * sizeof(float)) == 0;
  }
};

// The table of (positions, inv_freq): kept by content (never by pointer), so a stale entry can
// only miss. Four entries cover a model's layer types (Gemma 4: sliding and global frequencies).
const RopeTable& TableFor(ThreadPool& pool, const int32_t* positions, int64_t T,
                          const float* inv_freq, int64_t half) {
  thread_local std::array<RopeTable, 4> tables;
  thread_local size_t next = 0;
  for (const RopeTable& t : tables) {
    if (t.Holds(positions, T, inv_freq, half)) return t;
  }
  RopeTable& t = tables[next];
  next = (next + 1) % tables.size();
  t.positions.assign(positions, positions + T);
  t.inv_freq.assign(inv_freq, inv_freq + half);
  t.cs.resize(static_cast<size_t>(T * half * 2));
  double* cs = t.cs.data();
  pool.ParallelFor(T, std::max<int64_t>(1, 512 / std::max<int64_t>(1, half)),
                   [&](int64_t begin, int64_t end) {
                     for (int64_t i = begin; i < end; ++i) {
                       for (int64_t j = 0; j < half; ++j) {
                         const double angle = static_cast<double>(positions[i]) * inv_freq[j];
                         cs[(i * half + j) * 2] = std::cos(angle);
                         cs[(i * half + j) * 2 + 1] = std::sin(angle);
                       }
                     }
                   });
  return t;
}

}  // namespace

void Rope(ThreadPool& pool, float* x, const int32_t* positions, int64_t T, int64_t H, int64_t D,
          const float* inv_freq) {
  const int64_t half = D / 2;
  if (T <= 0 || H <= 0 || half <= 0) return;
  const double* cs = TableFor(pool, positions, T, inv_freq, half).cs.data();
  // x: [T, H, D]; one (token, head) row per index.
  pool.ParallelFor(T * H, std::max<int64_t>(1, 4096 / D), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      float* v = x + r * D;
      const double* row = cs + (r / H) * half * 2;
      for (int64_t j = 0; j < half; ++j) {
        const double c = row[2 * j], s = row[2 * j + 1];
        const double a = v[j], b = v[j + half];
        v[j] = static_cast<float>(a * c - b * s);
        v[j + half] = static_cast<float>(b * c + a * s);
      }
    }
  });
}

}  // namespace g4::cpu
