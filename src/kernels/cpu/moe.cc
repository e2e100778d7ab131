// CPU Moe (ops/moe.h): tokens grouped by expert, so each chosen expert's weights stream through
// the cache once per call, with the rows that chose it as one matmul (cpu::MatMul, SIMD and
// threaded). Must match g4::ref::Moe to f32 rounding of the matmuls.
#include <algorithm>
#include <vector>

#include "kernels/cpu/kernels.h"

namespace g4::cpu {

void Moe(ThreadPool& pool, const MoeArgs& a) {
  const int64_t E = a.experts(), H = a.hidden(), I = a.width(), R = a.R, k = a.top_k;
  // Routing: rows' choices, then the (row, weight) list of every expert.
  std::vector<int32_t> ids(static_cast<size_t>(R * k));
  std::vector<float> weights(ids.size());
  MoeRouteQueue queue;
  for (int64_t r = 0; r < R; ++r) {
    MoeRoute(a, r, queue, ids.data() + r * k, weights.data() + r * k);
  }
  std::vector<int64_t> begin(static_cast<size_t>(E + 1), 0);
  for (int32_t e : ids) ++begin[static_cast<size_t>(e) + 1];
  for (size_t e = 0; e < static_cast<size_t>(E); ++e) begin[e + 1] += begin[e];
  std::vector<int64_t> row_of(ids.size()), fill(begin.begin(), begin.end() - 1);
  std::vector<float> weight_of(ids.size());
  for (size_t c = 0; c < ids.size(); ++c) {  // rows in order within an expert
    const size_t at = static_cast<size_t>(fill[static_cast<size_t>(ids[c])]++);
    row_of[at] = static_cast<int64_t>(c) / k;
    weight_of[at] = weights[c];
  }
  std::fill(a.out, a.out + R * H, 0.0f);
  std::vector<float> xs, gate, up, y;
  for (int64_t e = 0; e < E; ++e) {
    const int64_t b = begin[static_cast<size_t>(e)], n = begin[static_cast<size_t>(e + 1)] - b;
    if (n == 0) continue;
    xs.resize(static_cast<size_t>(n * H));  // xs: [n, H] the rows that chose e
    for (int64_t i = 0; i < n; ++i) {
      std::copy_n(a.x + row_of[static_cast<size_t>(b + i)] * H, H, xs.data() + i * H);
    }
    gate.resize(static_cast<size_t>(n * I));  // gate, up: [n, I]
    up.resize(gate.size());
    MatMul(pool, ExpertGate(a, e), xs.data(), n, gate.data());
    MatMul(pool, ExpertUp(a, e), xs.data(), n, up.data());
    GeluMul(pool, gate.data(), up.data(), n, I, I, gate.data());  // gate: the activation
    y.resize(static_cast<size_t>(n * H));  // y: [n, H]
    MatMul(pool, ExpertDown(a, e), gate.data(), n, y.data());
    for (int64_t i = 0; i < n; ++i) {
      float* out = a.out + row_of[static_cast<size_t>(b + i)] * H;
      const float w = weight_of[static_cast<size_t>(b + i)];
      for (int64_t h = 0; h < H; ++h) out[h] += w * y[static_cast<size_t>(i * H + h)];
    }
  }
}

}  // namespace g4::cpu
