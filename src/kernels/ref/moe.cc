#include <vector>

#include "kernels/ref/kernels.h"

namespace g4::ref {

// Row by row, expert by expert, f64 sums over weight rows widened (or dequantized) to f64: the
// oracle of the grouped kernels.
void Moe(ThreadPool&, const MoeArgs& a) {
  const int64_t H = a.hidden(), I = a.width();
  std::vector<double> acc(static_cast<size_t>(H)), act(static_cast<size_t>(I)), row;
  MoeRouteQueue queue;
  int32_t ids[kMaxMoeTopK];
  float weights[kMaxMoeTopK];
  const auto dot = [&](const TensorView& w, int64_t n, const auto* v) {
    WeightRow(w, n, row);
    double s = 0;
    for (size_t k = 0; k < row.size(); ++k) s += row[k] * v[k];
    return s;
  };
  for (int64_t r = 0; r < a.R; ++r) {
    MoeRoute(a, r, queue, ids, weights);
    const float* x = a.x + r * H;
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int j = 0; j < a.top_k; ++j) {
      const TensorView gate = ExpertGate(a, ids[j]), up = ExpertUp(a, ids[j]);  // [I, H]
      const TensorView down = ExpertDown(a, ids[j]);                            // [H, I]
      for (int64_t i = 0; i < I; ++i) {
        act[static_cast<size_t>(i)] = GeluTanh(dot(gate, i, x)) * dot(up, i, x);
      }
      for (int64_t n = 0; n < H; ++n) {
        acc[static_cast<size_t>(n)] += double{weights[j]} * dot(down, n, act.data());
      }
    }
    for (int64_t n = 0; n < H; ++n) {
      a.out[r * H + n] = static_cast<float>(acc[static_cast<size_t>(n)]);
    }
  }
}

}  // namespace g4::ref
