// Moe: the routed experts of a Gemma 4 mixture-of-experts layer (26B-A4B, ../shared/spec/
// gemma4.md §2.7), after the router's projection:
//   p      = softmax(logits[r])                       over all E experts, f32
//   top    = the k largest p (ties broken as torch.topk on the CPU: MoeRoute)
//   w_e    = p_e / sum_top(p) * per_expert_scale[e]   for e in top
//   out[r] = sum_e w_e * down[e] @ (gelu_tanh(gate[e] @ x[r]) * (up[e] @ x[r]))
// logits: [R, E] the router's scores; x: [R, H] the experts' input (pre_feedforward_layernorm_2
// of the residual); gate_up: [E, 2I, H] (each expert's I gate rows, then its I up rows), or,
// with `up` set (GGUF ffn_gate_exps + ffn_up_exps), the gate stack [E, I, H] and up: [E, I, H];
// down: [E, H, I]; per_expert_scale: [E]; out: [R, H], not overlapping the inputs. Weights are
// F32, BF16, F16 or quantized rows (GGUF blocks along H or I, as llama.cpp stores [in, out, E]).
// A kernel reads only the chosen experts' weights, each once per call (tokens grouped by
// expert), so a decode step costs k experts and a prefill chunk at most every expert once.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "core/tensor.h"
#include "core/thread_pool.h"

namespace g4 {

inline constexpr int kMaxMoeTopK = 32;

struct MoeArgs {
  const float* logits = nullptr;             // [R, E]
  const float* x = nullptr;                  // [R, H]
  const TensorView* gate_up = nullptr;       // [E, 2I, H], or [E, I, H] with `up`
  const TensorView* up = nullptr;            // [E, I, H] or null (up rows are in gate_up)
  const TensorView* down = nullptr;          // [E, H, I]
  const TensorView* per_expert_scale = nullptr;  // [E]
  int64_t R = 0;
  int top_k = 0;                             // 1..min(E, kMaxMoeTopK)
  float* out = nullptr;                      // [R, H]

  int64_t experts() const { return gate_up->dim(0); }
  int64_t hidden() const { return gate_up->dim(2); }
  int64_t width() const { return down->dim(2); }  // I
};

using MoeOp = void(ThreadPool& pool, const MoeArgs& args);
using MoeFn = MoeOp*;

using MoeRouteQueue = std::vector<std::pair<float, int64_t>>;  // (probability, expert)

// Row r's routing (the first three lines above): ids[0..k) in descending probability and their
// weights. Shared by every host kernel so that they choose the same experts. `queue` is
// scratch, reused across rows.
//
// Ties: torch.topk on the CPU has no index rule; it runs libstdc++'s selection over (value,
// index) pairs in index order, std::partial_sort when 64 k <= E, else std::nth_element at k - 1
// then std::sort of the first k - 1 (ATen SortingKernel.cpp, topk_impl_loop), NaN first.
// Doing the same on the same f32 probabilities chooses as transformers does when router logits
// tie (torch 2.13 on 4 / 6 / 8 / 128 equal values, k = 2: {2, 3}, {3, 5}, {6, 5}, {0, 1}).
inline void MoeRoute(const MoeArgs& a, int64_t r, MoeRouteQueue& queue, int32_t* ids,
                     float* weights) {
  const int64_t E = a.experts();
  const float* l = a.logits + r * E;
  float m = l[0];
  for (int64_t e = 1; e < E; ++e) m = std::max(m, l[e]);
  double total = 0;
  for (int64_t e = 0; e < E; ++e) total += std::exp(static_cast<double>(l[e]) - m);
  using Entry = MoeRouteQueue::value_type;
  queue.resize(static_cast<size_t>(E));
  for (int64_t e = 0; e < E; ++e) {
    queue[static_cast<size_t>(e)] = {
        static_cast<float>(std::exp(static_cast<double>(l[e]) - m) / total), e};
  }
  const auto greater = [](const Entry& x, const Entry& y) {
    return (std::isnan(x.first) && !std::isnan(y.first)) || x.first > y.first;
  };
  const int64_t k = a.top_k;
  if (k * 64 <= E) {
    std::partial_sort(queue.begin(), queue.begin() + k, queue.end(), greater);
  } else {
    std::nth_element(queue.begin(), queue.begin() + (k - 1), queue.end(), greater);
    std::sort(queue.begin(), queue.begin() + (k - 1), greater);
  }
  // The renormalisation divides by the f32 sum of the chosen f32 probabilities, as torch does.
  float top_sum = 0;
  for (int64_t j = 0; j < k; ++j) top_sum += queue[static_cast<size_t>(j)].first;
  for (int64_t j = 0; j < k; ++j) {
    const Entry& c = queue[static_cast<size_t>(j)];
    ids[j] = static_cast<int32_t>(c.second);
    weights[j] = c.first / top_sum *
                 LoadAsF32(a.per_expert_scale->data, a.per_expert_scale->dtype, c.second);
  }
}

// Rows [first, first + rows) of expert e's matrix in an [E, N, K] stack, as a 2-D [rows, K]
// view: float, int4/int8 groups (with their scales) or GGUF blocks.
inline TensorView ExpertRows(const TensorView& t, int64_t e, int64_t first, int64_t rows) {
  const int64_t row = e * t.dim(1) + first, K = t.dim(2);
  const auto* base = static_cast<const uint8_t*>(t.data);
  if (!t.quantized()) {
    return TensorView(base + static_cast<size_t>(row * K) * DTypeSize(t.dtype), t.dtype,
                      {rows, K});
  }
  QuantInfo q = t.quant;
  if (q.panels != nullptr && q.panel_rows > 0 && row % q.panel_rows == 0) {
    q.panels = static_cast<const uint8_t*>(q.panels) + row / q.panel_rows * q.panel_bytes;
  } else {
    q.panels = nullptr;  // the slice does not start on a panel: its rows as stored
  }
  if (q.scales != nullptr && q.group_size > 0) {
    q.scales = static_cast<const uint8_t*>(q.scales) +
               static_cast<size_t>(row * (K / q.group_size)) * DTypeSize(q.scale_dtype);
  }
  return TensorView(base + static_cast<size_t>(row * q.row_bytes), t.dtype, {rows, K}, q);
}

// Expert e's [I, H] gate and up matrices and its [H, I] down matrix.
inline TensorView ExpertGate(const MoeArgs& a, int64_t e) {
  return ExpertRows(*a.gate_up, e, 0, a.width());
}
inline TensorView ExpertUp(const MoeArgs& a, int64_t e) {
  return a.up ? ExpertRows(*a.up, e, 0, a.width()) : ExpertRows(*a.gate_up, e, a.width(),
                                                                a.width());
}
inline TensorView ExpertDown(const MoeArgs& a, int64_t e) {
  return ExpertRows(*a.down, e, 0, a.hidden());
}

}  // namespace g4
