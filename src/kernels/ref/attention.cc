#include <cmath>
#include <limits>
#include <vector>

#include "core/dtype.h"
#include "core/q8_blocks.h"
#include "kernels/ref/kernels.h"
#include "ops/kv_blocks.h"

namespace g4::ref {
namespace {

// Element i of a's K (or V) as stored: f32, bf16, or int8 times its block's scale.
double KvAt(const float* f32, const uint16_t* bf16, const int8_t* q8, const float* scale8,
            int64_t i) {
  if (f32 != nullptr) return f32[i];
  if (bf16 != nullptr) return Bf16ToF32(bf16[i]);
  return static_cast<double>(scale8[i / kQ8Block]) * q8[i];
}

}  // namespace

void Attention(ThreadPool&, const AttentionArgs& a) {
  const int64_t D = a.head_dim, group = a.n_heads / a.n_kv_heads;
  std::vector<double> scores(static_cast<size_t>(a.S));
  for (int64_t t = 0; t < a.T; ++t) {
    for (int64_t h = 0; h < a.n_heads; ++h) {
      const float* q = a.q + (t * a.n_heads + h) * D;
      const int64_t kvh = h / group;
      double max_s = -std::numeric_limits<double>::infinity();
      for (int64_t s = 0; s < a.S; ++s) {
        const int32_t kp = a.k_pos[s], qp = a.q_pos[t];
        const bool visible = kp >= 0 && kp <= qp && (a.window <= 0 || qp - kp < a.window);
        if (!visible) {
          scores[s] = -std::numeric_limits<double>::infinity();
          continue;
        }
        const int64_t e = KvEntry(a.block_table, a.block_size, s);
        const int64_t k0 = (e * a.n_kv_heads + kvh) * D;
        double dot = 0.0;
        for (int64_t d = 0; d < D; ++d) dot += q[d] * KvAt(a.k, a.k16, a.k8, a.k_scale8, k0 + d);
        scores[s] = dot * a.scale;
        if (scores[s] > max_s) max_s = scores[s];
      }
      float* o = a.out + (t * a.n_heads + h) * D;
      std::vector<double> acc(static_cast<size_t>(D), 0.0);
      double denom = 0.0;
      if (max_s != -std::numeric_limits<double>::infinity()) {
        for (int64_t s = 0; s < a.S; ++s) {
          if (scores[s] == -std::numeric_limits<double>::infinity()) continue;
          const double p = std::exp(scores[s] - max_s);
          denom += p;
          const int64_t e = KvEntry(a.block_table, a.block_size, s);
          const int64_t v0 = (e * a.n_kv_heads + kvh) * D;
          for (int64_t d = 0; d < D; ++d) acc[d] += p * KvAt(a.v, a.v16, a.v8, a.v_scale8, v0 + d);
        }
      }
      for (int64_t d = 0; d < D; ++d) o[d] = denom > 0 ? static_cast<float>(acc[d] / denom) : 0.0f;
    }
  }
}

}  // namespace g4::ref
