#include <vector>

#include "kernels/ref/kernels.h"

namespace g4::ref {

// Row by row, expert by expert, f64 sums: the oracle of the grouped kernels.
void Moe(ThreadPool&, const MoeArgs& a) {
  const int64_t H = a.hidden(), I = a.width();
  std::vector<double> acc(static_cast<size_t>(H)), act(static_cast<size_t>(I));
  int32_t ids[kMaxMoeTopK];
  float weights[kMaxMoeTopK];
  for (int64_t r = 0; r < a.R; ++r) {
    MoeRoute(a, r, ids, weights);
    const float* x = a.x + r * H;
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int j = 0; j < a.top_k; ++j) {
      const TensorView gu = ExpertMatrix(*a.gate_up, ids[j]);  // [2I, H]
      const TensorView dn = ExpertMatrix(*a.down, ids[j]);     // [H, I]
      for (int64_t i = 0; i < I; ++i) {
        double gate = 0, up = 0;
        for (int64_t k = 0; k < H; ++k) {
          gate += double{LoadAsF32(gu.data, gu.dtype, i * H + k)} * x[k];
          up += double{LoadAsF32(gu.data, gu.dtype, (I + i) * H + k)} * x[k];
        }
        act[static_cast<size_t>(i)] = GeluTanh(gate) * up;
      }
      for (int64_t n = 0; n < H; ++n) {
        double y = 0;
        for (int64_t i = 0; i < I; ++i) {
          y += double{LoadAsF32(dn.data, dn.dtype, n * I + i)} * act[static_cast<size_t>(i)];
        }
        acc[static_cast<size_t>(n)] += double{weights[j]} * y;
      }
    }
    for (int64_t n = 0; n < H; ++n) {
      a.out[r * H + n] = static_cast<float>(acc[static_cast<size_t>(n)]);
    }
  }
}

}  // namespace g4::ref
