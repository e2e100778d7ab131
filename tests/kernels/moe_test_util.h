// Quantized [E, N, K] expert stacks for the Moe kernel tests (CPU and CUDA).
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "core/tensor.h"
#include "core/thread_pool.h"
#include "ops/quantize.h"
#include "ops/quantize_gguf.h"
#include "kernels/test_util.h"

namespace g4::testing {

// A float [E, N, K] stack quantized row by row: GGUF blocks of `kind`, or int4 / int8 groups of
// 32 with bf16 scales (int4: the compressed-tensors W4A16 layout).
struct QuantStack {
  std::vector<uint8_t> blocks;
  std::shared_ptr<const void> storage;
  TensorView view;
};
inline QuantStack QuantizeStack(const std::vector<float>& v, const std::vector<int64_t>& shape,
                                QuantKind kind) {
  const int64_t K = shape.back(), rows = static_cast<int64_t>(v.size()) / K;
  QuantStack q;
  if (kind == QuantKind::kInt4Group || kind == QuantKind::kInt8Group) {
    ThreadPool pool(1);
    auto w = QuantizeWeight(pool, TensorView(v.data(), DType::kF32, {rows, K}), kind, 32,
                            DType::kBF16);
    EXPECT_TRUE(w.ok()) << w.status().ToString();
    q.storage = w->storage;
    q.view = w->view;
    q.view.shape = shape;
    return q;
  }
  const BlockFormat f = GgufBlockFormat(kind);
  const int64_t row_bytes = K / f.elems * f.bytes;
  q.blocks.resize(static_cast<size_t>(rows * row_bytes));
  for (int64_t r = 0; r < rows; ++r) {
    EXPECT_TRUE(QuantizeGgufRow(kind, v.data() + r * K, K, q.blocks.data() + r * row_bytes).ok());
  }
  q.view = TensorView(q.blocks.data(), DType::kU8, shape,
                      QuantInfo{kind, nullptr, DType::kBF16, f.elems, row_bytes});
  return q;
}

// A fused [E, 2I, H] gate_up stack's experts as llama.cpp's other layout: [E, I, H] gate and up.
inline void SplitGateUp(const std::vector<float>& fused, int64_t E, int64_t I, int64_t H,
                        std::vector<float>* gate, std::vector<float>* up) {
  for (int64_t e = 0; e < E; ++e) {
    const auto expert = fused.begin() + e * 2 * I * H;
    gate->insert(gate->end(), expert, expert + I * H);
    up->insert(up->end(), expert + I * H, expert + 2 * I * H);
  }
}

// E experts of which 1 and 4 win every one of R rows; the others' bf16 weights are NaN, which no
// kernel may read (the output must stay finite).
struct UnchosenNanCase {
  UnchosenNanCase(int64_t E, int64_t H, int64_t I, int64_t R)
      : gate_up(Poisoned(RandomFloats(E * 2 * I * H, 5, -0.3f, 0.3f), E), DType::kBF16,
                {E, 2 * I, H}, false),
        down(Poisoned(RandomFloats(E * H * I, 6, -0.3f, 0.3f), E), DType::kBF16, {E, H, I},
             false),
        scale(std::vector<float>(static_cast<size_t>(E), 1.0f), DType::kF32, {E}, false),
        logits(static_cast<size_t>(R * E), -1.0f),
        x(RandomFloats(R * H, 7)) {
    for (int64_t r = 0; r < R; ++r) logits[r * E + 1] = 2.0f, logits[r * E + 4] = 1.0f + 0.1f * r;
    args.logits = logits.data(), args.x = x.data(), args.gate_up = &gate_up.view();
    args.down = &down.view(), args.per_expert_scale = &scale.view(), args.R = R, args.top_k = 2;
  }
  // Every expert but 1 and 4 (equal slices of v) set to NaN.
  static std::vector<float> Poisoned(std::vector<float> v, int64_t E) {
    const size_t per = v.size() / static_cast<size_t>(E);
    for (size_t e : {0, 2, 3, 5}) {
      if (e < static_cast<size_t>(E)) {
        std::fill_n(v.begin() + e * per, per, std::numeric_limits<float>::quiet_NaN());
      }
    }
    return v;
  }
  StoredTensor gate_up, down, scale;
  std::vector<float> logits, x;
  MoeArgs args;  // out unset
};

}  // namespace g4::testing
