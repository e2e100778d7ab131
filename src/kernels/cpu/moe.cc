// CPU Moe (ops/moe.h): tokens grouped by expert, so each chosen expert's weights stream through
// the cache once per call, with the rows that chose it as one matmul (cpu::MatMul, SIMD and
// threaded; MoeQ8a: cpu::MatMulQ8a, int8 activations). Moe must match g4::ref::Moe to f32
// rounding of the matmuls.
//
// A decode step (every chosen expert has one row) runs the experts side by side instead, one
// thread per expert with the matmuls inside it single-threaded: each thread streams whole
// experts, one dispatch per layer instead of three per expert (26B-A4B: 8 experts of three
// 1-2 MB matrices, 30 layers: 720 short parallel loops a token otherwise).
#include <algorithm>
#include <vector>

#include "kernels/cpu/kernels.h"

namespace g4::cpu {
namespace {

struct ExpertScratch {
  std::vector<float> xs, gate, up, act;
};

// y: [n, H] = expert e (unweighted) over the rows `rows` of a.x.
template <MatMulFn kMatMul>
void RunExpert(ThreadPool& pool, const MoeArgs& a, int64_t e, const int64_t* rows, int64_t n,
               ExpertScratch& s, float* y) {
  const int64_t H = a.hidden(), I = a.width();
  s.xs.resize(static_cast<size_t>(n * H));  // xs: [n, H] the rows that chose e
  s.act.resize(static_cast<size_t>(n * I));  // act: [n, I] gelu(gate) * up
  for (int64_t i = 0; i < n; ++i) std::copy_n(a.x + rows[i] * H, H, s.xs.data() + i * H);
  if (a.up == nullptr && n == 1) {  // gate and up rows are adjacent: one matmul (x quantized
    // once under MoeQ8a); gate: [1, 2I]
    s.gate.resize(static_cast<size_t>(2 * I));
    kMatMul(pool, ExpertRows(*a.gate_up, e, 0, 2 * I), s.xs.data(), 1, s.gate.data());
    GeluMul(pool, s.gate.data(), s.gate.data() + I, 1, I, I, s.act.data());
  } else {
    s.gate.resize(static_cast<size_t>(n * I));  // gate, up: [n, I]
    s.up.resize(s.gate.size());
    kMatMul(pool, ExpertGate(a, e), s.xs.data(), n, s.gate.data());
    kMatMul(pool, ExpertUp(a, e), s.xs.data(), n, s.up.data());
    GeluMul(pool, s.gate.data(), s.up.data(), n, I, I, s.act.data());
  }
  kMatMul(pool, ExpertDown(a, e), s.act.data(), n, y);
}

template <MatMulFn kMatMul>
void MoeOver(ThreadPool& pool, const MoeArgs& a) {
  const int64_t E = a.experts(), H = a.hidden(), R = a.R, k = a.top_k;
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
  const auto count_of = [&](int64_t e) {
    return begin[static_cast<size_t>(e + 1)] - begin[static_cast<size_t>(e)];
  };
  std::vector<int64_t> active;  // the experts some row chose, in index order
  bool one_row_each = true;
  for (int64_t e = 0; e < E; ++e) {
    const int64_t n = count_of(e);
    if (n == 0) continue;
    active.push_back(e);
    one_row_each = one_row_each && n == 1;
  }
  const auto rows_of = [&](int64_t e) { return row_of.data() + begin[static_cast<size_t>(e)]; };
  // y: [rows of every active expert in turn, H], then summed weighted into out in expert order.
  std::vector<float> y(ids.size() * static_cast<size_t>(H));
  const auto y_of = [&](int64_t e) { return y.data() + begin[static_cast<size_t>(e)] * H; };
  const int64_t A = static_cast<int64_t>(active.size());
  if (one_row_each && A >= pool.size() && pool.size() > 1) {
    pool.ParallelFor(A, 1, [&](int64_t j0, int64_t j1) {
      thread_local ThreadPool serial(1);
      thread_local ExpertScratch s;
      for (int64_t j = j0; j < j1; ++j) {
        const int64_t e = active[static_cast<size_t>(j)];
        RunExpert<kMatMul>(serial, a, e, rows_of(e), 1, s, y_of(e));
      }
    });
  } else {
    ExpertScratch s;
    for (int64_t e : active) {
      RunExpert<kMatMul>(pool, a, e, rows_of(e), count_of(e), s, y_of(e));
    }
  }
  std::fill(a.out, a.out + R * H, 0.0f);
  for (int64_t e : active) {
    for (int64_t c = begin[static_cast<size_t>(e)]; c < begin[static_cast<size_t>(e + 1)]; ++c) {
      float* out = a.out + row_of[static_cast<size_t>(c)] * H;
      const float w = weight_of[static_cast<size_t>(c)];
      const float* yc = y.data() + c * H;
      for (int64_t h = 0; h < H; ++h) out[h] += w * yc[h];
    }
  }
}

}  // namespace

void Moe(ThreadPool& pool, const MoeArgs& a) { MoeOver<MatMul>(pool, a); }
void MoeQ8a(ThreadPool& pool, const MoeArgs& a) { MoeOver<MatMulQ8a>(pool, a); }

}  // namespace g4::cpu
