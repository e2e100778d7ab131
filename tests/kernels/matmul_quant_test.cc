// The quantized-weight MatMul cases (matmul_quant_test.h) on the CPU kernels, every Highway
// target this machine runs, pools of 1 and 3 threads; the compressed-tensors nibble order
// exactly, and QuantizeWeight's round trip.

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/kernels.h"
#include "kernels/matmul_quant_test.h"
#include "kernels/ref/kernels.h"
#include "kernels/test_util.h"
#include "ops/quantize.h"

namespace g4 {
namespace testing {

INSTANTIATE_TEST_SUITE_P(Cpu, QuantMatMulTest, ::testing::ValuesIn(CpuOpBackends()),
                         OpBackendName);

}  // namespace testing

namespace {

using testing::FloatBuffer;
using testing::RandomFloats;

// The compressed-tensors nibble order (formats.md §1.3 worked example): the signed row
// [0,1,2,3,4,5,6,7] packs to the int32 word 0xFEDCBA98 and [-8,-7,-1,0,1,2,6,7] to 0xFEA98710.
// With scale 1 and x = e_k, y = q_k exactly, on every target, decode and prefill paths.
TEST(QuantMatMulExact, CompressedTensorsNibbleOrder) {
  const uint32_t words[2] = {0xFEDCBA98u, 0xFEA98710u};
  const int expected[2][8] = {{0, 1, 2, 3, 4, 5, 6, 7}, {-8, -7, -1, 0, 1, 2, 6, 7}};
  // Rows of 128 elements (every target's SIMD chunk and the AVX-512 block-128 path are used):
  // the word, then nibbles 8 (q = 0).
  const int64_t K = 128, N = 2;
  std::vector<uint8_t> data(static_cast<size_t>(N * K / 2), 0x88);  // nibbles 8: q = 0
  for (int n = 0; n < N; ++n) std::memcpy(data.data() + n * K / 2, &words[n], 4);  // LE host
  const std::vector<uint16_t> scales(static_cast<size_t>(N * K / 32), F32ToBf16(1.0f));
  const TensorView w(data.data(), DType::kU8, {N, K},
                     QuantInfo{QuantKind::kInt4Group, scales.data(), DType::kBF16, 32, K / 2});
  for (const std::string& target : testing::Targets()) {
    const testing::ScopedTarget scoped(target);
    ThreadPool pool(1);
    for (int64_t k = 0; k < 8; ++k) {
      for (int64_t T : {1, 3}) {
        std::vector<float> x(static_cast<size_t>(T * K), 0.0f), y(static_cast<size_t>(T * N));
        for (int64_t t = 0; t < T; ++t) x[t * K + k] = 1.0f;
        cpu::MatMul(pool, w, x.data(), T, y.data());
        for (int64_t t = 0; t < T; ++t) {
          EXPECT_EQ(y[t * N + 0], expected[0][k]) << target << " k=" << k << " T=" << T;
          EXPECT_EQ(y[t * N + 1], expected[1][k]) << target << " k=" << k << " T=" << T;
        }
      }
    }
  }
}

// QuantizeWeight round trip: every dequantized element is within half a step of the float
// weight, |w - q s| <= s / 2, plus the bf16 rounding of the scale (which may put the largest
// element up to 2^-8 past the clamp: 7.5 s * 2^-8 < 0.03 s).
TEST(QuantMatMulExact, QuantizedCopyTracksFloatWeights) {
  ThreadPool pool(2);
  const int64_t N = 37, K = 96;
  const std::vector<float> wf = RandomFloats(N * K, 5);
  const TensorView wv(wf.data(), DType::kF32, {N, K});
  for (auto [kind, G] : {std::pair{QuantKind::kInt8Group, K}, {QuantKind::kInt4Group, int64_t{32}}}) {
    auto q = QuantizeWeight(pool, wv, kind, G, DType::kBF16);
    ASSERT_TRUE(q.ok()) << q.status().ToString();
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t k = 0; k < K; ++k) {
        const float scale = LoadAsF32(q->view.quant.scales, DType::kBF16, n * (K / G) + k / G);
        ASSERT_LE(std::fabs(q->view.at(n * K + k) - wf[n * K + k]), 0.53f * scale)
            << QuantKindName(kind) << " n=" << n << " k=" << k;
      }
    }
  }
}

}  // namespace
}  // namespace g4
