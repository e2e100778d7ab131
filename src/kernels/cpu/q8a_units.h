// The units of the per-call int8-activation GEMMs (matmul_q8a_gemm.cc on AVX-512 VNNI,
// matmul_q8a_gemm_avx2.cc): a unit is the run of weights under one scale, a block of 32 (Q4_0,
// Q5_0, Q8_0), a sub-block of 32 (Q4_K, whose min term is one more FMA) or a group of 16 (Q6_K).
// x's rows are quantized once per call (QuantizeQ8Blocks) with what each unit's sum needs.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "core/thread_pool.h"

namespace g4::cpu {

// Values per unit (lines of 4 = values / 4), whether a min term follows, and the offset the
// unsigned values carry (Q8DotOffset).
struct Units {
  int64_t values;
  bool min;
  int32_t offset;
};

Units UnitsOf(QuantKind kind);

// x quantized row by row: xq [T, K]; per unit [T, units]: the start of its integer sum
// (-offset * sum xq), the dx of its block of 32, and (Q4_K) dx * sum xq for the min term.
struct QuantRows {
  std::vector<int8_t> xq;
  std::vector<float> dx32;
  std::vector<int32_t> sx32;
  std::vector<int32_t> start;
  std::vector<float> dx, dxs;
};

// 16 rows of w unpacked for one call: u [units][lines][16 rows][4 bytes] (32-bit lane r of a
// line is row r), scale and (Q4_K) min [units][16].
inline constexpr int64_t kUnitPanelRows = 16;
struct UnitPanel {
  std::vector<uint8_t> u;
  std::vector<float> scale, min;
};

// The T rows of x: [T, K] into q, sized here, on the pool's threads.
void QuantizeUnitRows(ThreadPool& pool, const Units& un, const float* x, int64_t T, int64_t K,
                      QuantRows& q);

}  // namespace g4::cpu
