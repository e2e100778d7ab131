// Units and x's quantized rows for the per-call int8-activation GEMMs (q8a_units.h).

#include "kernels/cpu/q8a_units.h"

#include "core/q8_blocks.h"
#include "kernels/cpu/q8_blocks.h"

namespace g4::cpu {
namespace {

// Row t of x into q (the caller sized q's arrays).
void QuantizeRow(const Units& un, const float* x, int64_t K, int64_t t, QuantRows& q) {
  const int64_t blocks = K / kQ8Block, units = K / un.values;
  int8_t* xq = q.xq.data() + t * K;
  float* dx32 = q.dx32.data() + t * blocks;
  int32_t* sx32 = q.sx32.data() + t * blocks;
  cpu::QuantizeQ8Blocks(x, K, xq, dx32, sx32);
  int32_t* start = q.start.data() + t * units;
  float* dx = q.dx.data() + t * units;
  for (int64_t u = 0; u < units; ++u) {
    const int64_t b = u * un.values / kQ8Block;
    int32_t sum = sx32[b];
    if (un.values != kQ8Block) {
      sum = 0;
      for (int64_t j = 0; j < un.values; ++j) sum += xq[u * un.values + j];
    }
    start[u] = -un.offset * sum;
    dx[u] = dx32[b];
    if (un.min) q.dxs[static_cast<size_t>(t * units + u)] = dx32[b] * static_cast<float>(sum);
  }
}

}  // namespace

Units UnitsOf(QuantKind kind) {
  if (kind == QuantKind::kQ6_K) return {16, false, 32};
  if (kind == QuantKind::kQ4_K) return {32, true, 0};
  return {32, false, Q8DotOffset(kind)};
}

void QuantizeUnitRows(ThreadPool& pool, const Units& un, const float* x, int64_t T, int64_t K,
                      QuantRows& q) {
  const int64_t blocks = K / kQ8Block, units = K / un.values;
  q.xq.resize(static_cast<size_t>(T * K));
  q.dx32.resize(static_cast<size_t>(T * blocks));
  q.sx32.resize(static_cast<size_t>(T * blocks));
  q.start.resize(static_cast<size_t>(T * units));
  q.dx.resize(static_cast<size_t>(T * units));
  if (un.min) q.dxs.resize(static_cast<size_t>(T * units));
  pool.ParallelFor(T, 1, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) QuantizeRow(un, x + t * K, K, t, q);
  });
}

}  // namespace g4::cpu
