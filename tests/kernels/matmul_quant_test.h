// MatMul (ops/matmul.h) on quantized weights (int4 groups in the compressed-tensors layout, int8
// groups) against ref::MatMul, which dequantizes element by element, on every backend
// (op_backend.h): scale dtypes BF16/F16/F32, group sizes that are and are not multiples of the
// SIMD chunk (2L nibbles / L bytes), odd int4 groups (scalar paths), T = 1 (fused decode) and
// T > 1 (dequantized panels; the device's GEMM), odd N (row tails of the CPU's 4-row tile), padded
// row strides and misaligned x, weights and scales, model widths. A device runs int4 weights
// (W4A16) and sends int8 ones to the CPU kernel.
// Tolerance as for float weights (matmul_test.h): |y - ref| <= 1e-5 * sum_k |x_k w_k| on the
// CPU, where every dequantized weight q * scale is exact in f32 and the only difference is f32
// accumulation; 3e-5 on CUDA (x and q * scale as hi + lo parts on tensor cores).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kernels/op_backend.h"
#include "kernels/ref/kernels.h"
#include "kernels/test_util.h"
#include "ops/quantize.h"

namespace g4::testing {

inline constexpr double kQuantMatMulCpuTol = 1e-5;

// A quantized [N, K] weight with random q and scales, rows `row_bytes` apart (>= the packed
// size, so a padded stride is exercised), data and scales one byte / one element past an
// aligned address when `misalign` is set.
class QuantTensor {
 public:
  QuantTensor(QuantKind kind, int64_t N, int64_t K, int64_t G, DType scale_dtype, bool misalign,
              uint32_t seed, int64_t extra_row_bytes = 0)
      : data_(static_cast<size_t>(N * (QuantRowBytes(kind, K) + extra_row_bytes) + 64)),
        scales_(static_cast<size_t>(N * (K / G) + 1) * 4 + 64) {
    std::mt19937 rng(seed);
    const int64_t row_bytes = QuantRowBytes(kind, K) + extra_row_bytes;
    uint8_t* d = data_.data() + (misalign ? 1 : 0);
    for (int64_t i = 0; i < N * row_bytes; ++i) d[i] = static_cast<uint8_t>(rng());
    if (kind == QuantKind::kInt8Group) {  // q in [-127, 127]: -128 is never written
      for (int64_t i = 0; i < N * row_bytes; ++i) {
        if (d[i] == 0x80) d[i] = 0x81;
      }
    }
    const size_t ssize = DTypeSize(scale_dtype);
    uint8_t* s = scales_.data() + (misalign ? ssize : 0);
    std::uniform_real_distribution<float> dist(-0.1f, 0.1f);
    for (int64_t i = 0; i < N * (K / G); ++i) {
      const float v = dist(rng);
      if (scale_dtype == DType::kF32) {
        std::memcpy(s + i * 4, &v, 4);
      } else {
        const uint16_t b = scale_dtype == DType::kBF16 ? F32ToBf16(v) : F32ToF16(v);
        std::memcpy(s + i * 2, &b, 2);
      }
    }
    view_ = TensorView(d, kind == QuantKind::kInt4Group ? DType::kU8 : DType::kI8, {N, K},
                       QuantInfo{kind, s, scale_dtype, G, row_bytes});
  }
  const TensorView& view() const { return view_; }

 private:
  std::vector<uint8_t> data_, scales_;
  TensorView view_;
};

// max |y - ref| / scale over every output of `matmul`; NaN (an unwritten output) propagates.
inline double RunQuantMatMul(MatMulFn matmul, ThreadPool& pool, const TensorView& w, int64_t T,
                             bool misalign, uint32_t seed) {
  const int64_t N = w.dim(0), K = w.dim(1);
  const FloatBuffer x(RandomFloats(T * K, seed), misalign);
  FloatBuffer y(T * N, misalign);
  for (int64_t i = 0; i < T * N; ++i) y.data()[i] = NAN;
  std::vector<float> ref(static_cast<size_t>(T * N));
  matmul(pool, w, x.data(), T, y.data());
  ref::MatMul(pool, w, x.data(), T, ref.data());
  return MaxErrorOverScale(y.ToVector(T * N), ref, MatMulAbsScale(w, x.data(), T));
}

class QuantMatMulTest : public OpBackendTest {
 protected:
  double tol() const { return backend().device ? 3e-5 : kQuantMatMulCpuTol; }
};

inline constexpr QuantKind kGroupKinds[] = {QuantKind::kInt4Group, QuantKind::kInt8Group};

TEST_P(QuantMatMulTest, MatchesRefOnOddShapes) {
  // (group size, groups per row): multiples of every target's chunk (32, 64, 128; 32 with K a
  // multiple of 128 takes the AVX-512 block-128 decode path), groups that leave a tail (6, 8 on
  // 8- and 16-lane targets, 5 and 3: odd int4 groups take the scalar path).
  const std::vector<std::pair<int64_t, int64_t>> groups = {
      {32, 1}, {32, 3}, {32, 4}, {32, 12}, {64, 2}, {128, 3}, {8, 5}, {6, 7}, {5, 4}, {3, 5},
      {48, 1}};
  uint32_t seed = 1;
  for (QuantKind kind : kGroupKinds) {
    for (DType scale_dtype : kFloatDTypes) {
      for (auto [G, ng] : groups) {
        const int64_t K = G * ng;
        for (int64_t N : {1, 3, 6, 17}) {
          for (int64_t T : {1, 2, 3, 5, 17}) {
            for (bool misalign : {false, true}) {
              SCOPED_TRACE(std::string(QuantKindName(kind)) + " scales " +
                           DTypeName(scale_dtype) + " G=" + std::to_string(G) +
                           " K=" + std::to_string(K) + " N=" + std::to_string(N) +
                           " T=" + std::to_string(T) + " misalign=" + std::to_string(misalign));
              const QuantTensor w(kind, N, K, G, scale_dtype, misalign, seed++, misalign ? 4 : 0);
              const double e = RunQuantMatMul(ops().matmul, pool(), w.view(), T, misalign, seed++);
              WeightDied();  // the next w may reuse its address
              ASSERT_LE(e, tol());
            }
          }
        }
      }
    }
  }
}

// E2B widths: hidden 1536 (attention, MLP up), 6144 (MLP down), per-row int8 (G = K) as the LM
// head copy uses; N spans several 4-row tiles and panels per thread.
TEST_P(QuantMatMulTest, MatchesRefAtModelWidths) {
  for (QuantKind kind : kGroupKinds) {
    for (DType scale_dtype : kFloatDTypes) {
      for (auto [N, K] : {std::pair<int64_t, int64_t>{259, 1536}, {67, 6144}}) {
        for (int64_t G : {int64_t{32}, K}) {
          for (int64_t T : {1, 8}) {
            SCOPED_TRACE(std::string(QuantKindName(kind)) + " scales " + DTypeName(scale_dtype) +
                         " N=" + std::to_string(N) + " K=" + std::to_string(K) +
                         " G=" + std::to_string(G) + " T=" + std::to_string(T));
            const QuantTensor w(kind, N, K, G, scale_dtype, /*misalign=*/true, 77);
            const double e = RunQuantMatMul(ops().matmul, pool(), w.view(), T, true, 78);
            WeightDied();
            ASSERT_LE(e, 2 * tol());
          }
        }
      }
    }
  }
}

}  // namespace g4::testing
