// GroupedMatMul (ops/matmul.h) on every backend (op_backend.h): q/k/v- and gate/up-like groups
// of 2 and 3 weights with different N sharing x, as F32/BF16/F16 and int4 (bf16 scales), at
// decode T (the device's one grouped GEMV launch per chunk of rows) and prefill T (one MatMul
// per weight), against ref::MatMul per weight; gelu_gate groups (the MLP's gate and up, GeluMul
// in the device GEMV's epilogue) against gelu_tanh(gate) * up from the ref matmuls, and gelu_up
// groups (the PLE branch: up rows from memory, a stride apart). Tolerance as the dense GEMV
// tests: 1e-5 of the row's sum |x w| (MatMulError); 3e-5 of each factor's through the GELU.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "kernels/op_backend.h"
#include "kernels/ref/kernels.h"
#include "kernels/test_util.h"
#include "ops/quantize.h"

namespace g4::testing {

class MatMulGroupTest : public OpBackendTest {};

// Runs the group on `grouped` and checks every output against ref::MatMul.
inline void CheckGroup(GroupedMatMulFn grouped, ThreadPool& pool,
                       const std::vector<const TensorView*>& ws, int64_t T, uint32_t seed) {
  const int64_t K = ws[0]->dim(1);
  const std::vector<float> x = RandomFloats(T * K, seed);
  MatMulGroup g;
  std::vector<std::vector<float>> ys(ws.size());
  for (size_t i = 0; i < ws.size(); ++i) {
    ys[i].assign(static_cast<size_t>(T * ws[i]->dim(0)), -7.0f);
    g.w[i] = ws[i];
    g.y[i] = ys[i].data();
  }
  g.count = static_cast<int>(ws.size());
  grouped(pool, g, x.data(), T);
  for (size_t i = 0; i < ws.size(); ++i) {
    SCOPED_TRACE(::testing::Message() << "weight " << i);
    std::vector<float> ref(ys[i].size());
    ref::MatMul(pool, *ws[i], x.data(), T, ref.data());
    EXPECT_LE(MatMulError(*ws[i], x, T, ys[i], ref), 1e-5);
  }
}

// A gelu_gate group (gate, up of one N) on `grouped`: y[0] against gelu_tanh(ref gate) * ref up
// in f64, each factor's matmul error (3e-5 of its sum |x w|) carried through: |gelu'| <= 1.13.
inline void CheckGated(GroupedMatMulFn grouped, ThreadPool& pool, const TensorView& gate,
                       const TensorView& up, int64_t T, uint32_t seed) {
  const int64_t N = gate.dim(0), K = gate.dim(1);
  const std::vector<float> x = RandomFloats(T * K, seed, -2.0f, 2.0f);
  std::vector<float> y0(static_cast<size_t>(T * N), -7.0f), y1(y0.size(), -7.0f);
  MatMulGroup g;
  g.w[0] = &gate, g.y[0] = y0.data();
  g.w[1] = &up, g.y[1] = y1.data();
  g.count = 2;
  g.gelu_gate = true;
  grouped(pool, g, x.data(), T);
  std::vector<float> rg(y0.size()), ru(y0.size());
  ref::MatMul(pool, gate, x.data(), T, rg.data());
  ref::MatMul(pool, up, x.data(), T, ru.data());
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t n = 0; n < N; ++n) {
      double mag_g = 0.0, mag_u = 0.0;
      for (int64_t k = 0; k < K; ++k) {
        mag_g += std::fabs(x[t * K + k] * gate.at(n * K + k));
        mag_u += std::fabs(x[t * K + k] * up.at(n * K + k));
      }
      const size_t i = static_cast<size_t>(t * N + n);
      const double gelu = ref::GeluTanh(rg[i]), want = gelu * ru[i];
      const double tol = 3e-5 * (1.13 * mag_g * std::fabs(ru[i]) + std::fabs(gelu) * mag_u) + 1e-6;
      ASSERT_NEAR(y0[i], want, tol) << "t=" << t << " n=" << n;
    }
  }
}

TEST_P(MatMulGroupTest, GatedGroupsMatchGeluOfGateTimesUp) {
  uint32_t seed = 300;
  for (DType dt : kFloatDTypes) {
    for (int64_t K : {64, 37}) {
      const StoredTensor gate(RandomFloats(21 * K, ++seed), dt, {21, K}, false);
      const StoredTensor up(RandomFloats(21 * K, ++seed), dt, {21, K}, false);
      for (int64_t T : {1, 8, 9}) {  // 9: one MatMul per weight, then GeluMul
        SCOPED_TRACE(::testing::Message() << DTypeName(dt) << " K=" << K << " T=" << T);
        CheckGated(ops().grouped_matmul, pool(), gate.view(), up.view(), T, ++seed);
      }
      WeightDied();  // gate, up die here
    }
  }
  const int64_t K = 128;
  const StoredTensor gf(RandomFloats(19 * K, ++seed), DType::kF32, {19, K}, false);
  const StoredTensor uf(RandomFloats(19 * K, ++seed), DType::kF32, {19, K}, false);
  auto gq = QuantizeWeight(pool(), gf.view(), QuantKind::kInt4Group, 32, DType::kBF16);
  auto uq = QuantizeWeight(pool(), uf.view(), QuantKind::kInt4Group, 32, DType::kBF16);
  ASSERT_TRUE(gq.ok() && uq.ok());
  for (int64_t T : {1, 5, 12}) {
    SCOPED_TRACE(::testing::Message() << "int4 T=" << T);
    CheckGated(ops().grouped_matmul, pool(), gq->view, uq->view, T, ++seed);
  }
}

// A gelu_up group (one weight, `up` rows a stride apart: the PLE branch) on `grouped`: y[0]
// against gelu_tanh(ref) * up in f64, the matmul error carried through |gelu'| <= 1.13; the
// floats between up's rows are NaN and must not be read.
inline void CheckGeluUp(GroupedMatMulFn grouped, ThreadPool& pool, const TensorView& w, int64_t T,
                        uint32_t seed) {
  const int64_t N = w.dim(0), K = w.dim(1), stride = 3 * N + 1;
  const std::vector<float> x = RandomFloats(T * K, seed, -2.0f, 2.0f);
  const std::vector<float> rows = RandomFloats(T * N, seed + 1, -2.0f, 2.0f);
  std::vector<float> up(static_cast<size_t>((T - 1) * stride + N), std::nanf(""));
  for (int64_t t = 0; t < T; ++t) std::copy_n(rows.begin() + t * N, N, up.begin() + t * stride);
  std::vector<float> y(static_cast<size_t>(T * N), -7.0f), ref(y.size());
  MatMulGroup g;
  g.w[0] = &w, g.y[0] = y.data(), g.count = 1;
  g.gelu_up = up.data(), g.gelu_up_stride = stride;
  grouped(pool, g, x.data(), T);
  ref::MatMul(pool, w, x.data(), T, ref.data());
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t n = 0; n < N; ++n) {
      double mag = 0.0;
      for (int64_t k = 0; k < K; ++k) mag += std::fabs(x[t * K + k] * w.at(n * K + k));
      const size_t i = static_cast<size_t>(t * N + n);
      const double u = rows[i], want = ref::GeluTanh(ref[i]) * u;
      ASSERT_NEAR(y[i], want, 3e-5 * 1.13 * mag * std::fabs(u) + 1e-6) << "t=" << t << " n=" << n;
    }
  }
}

TEST_P(MatMulGroupTest, GeluUpGroupsMatchGeluTimesRows) {
  uint32_t seed = 500;
  for (DType dt : kFloatDTypes) {
    const StoredTensor w(RandomFloats(19 * 40, ++seed), dt, {19, 40}, false);
    for (int64_t T : {1, 3, 9}) {  // 9: MatMul, then the strided GeluMul
      SCOPED_TRACE(::testing::Message() << DTypeName(dt) << " T=" << T);
      CheckGeluUp(ops().grouped_matmul, pool(), w.view(), T, ++seed);
    }
    WeightDied();  // w dies here
  }
  const StoredTensor f(RandomFloats(23 * 64, ++seed), DType::kF32, {23, 64}, false);
  auto q = QuantizeWeight(pool(), f.view(), QuantKind::kInt4Group, 32, DType::kBF16);
  ASSERT_TRUE(q.ok());
  for (int64_t T : {1, 6}) {
    SCOPED_TRACE(::testing::Message() << "int4 T=" << T);
    CheckGeluUp(ops().grouped_matmul, pool(), q->view, T, ++seed);
  }
}

TEST_P(MatMulGroupTest, FloatGroupsMatchRefPerWeight) {
  uint32_t seed = 1;
  for (DType dt : kFloatDTypes) {
    for (int64_t K : {40, 37}) {  // 16-byte loads / element loads
      std::vector<StoredTensor> w;
      for (int64_t N : {24, 8, 9}) {  // q-, k-, v-like: N not a multiple of 8 warps
        w.emplace_back(RandomFloats(N * K, ++seed), dt, std::vector<int64_t>{N, K}, false);
      }
      for (int64_t T : {1, 3, 8, 11}) {
        for (int count : {2, 3}) {
          SCOPED_TRACE(::testing::Message() << DTypeName(dt) << " K=" << K << " T=" << T
                                            << " count=" << count);
          std::vector<const TensorView*> ws;
          for (int i = 0; i < count; ++i) ws.push_back(&w[static_cast<size_t>(i)].view());
          CheckGroup(ops().grouped_matmul, pool(), ws, T, ++seed);
        }
      }
      WeightDied();  // w dies here
    }
  }
}

TEST_P(MatMulGroupTest, Int4GroupsMatchRefPerWeight) {
  const int64_t K = 96;
  std::vector<QuantizedWeight> q;
  uint32_t seed = 100;
  for (int64_t N : {33, 16, 5}) {
    const StoredTensor f(RandomFloats(N * K, ++seed), DType::kF32, {N, K}, false);
    auto w = QuantizeWeight(pool(), f.view(), QuantKind::kInt4Group, 32, DType::kBF16);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    q.push_back(*std::move(w));
  }
  for (int64_t T : {1, 4, 5, 9}) {
    SCOPED_TRACE(::testing::Message() << "T=" << T);
    CheckGroup(ops().grouped_matmul, pool(), {&q[0].view, &q[1].view, &q[2].view}, T, ++seed);
  }
}

}  // namespace g4::testing
