// Load-time repacked weights for the CPU MatMulQ8a (ops/matmul_q8a.h) on AVX-512 VNNI and AVX2
// (Q4_0, Q5_0, Q8_0 and Q6_K, matmul_q8a_packed_q6k.h): rows regrouped into panels of 16 rows in
// which int32 lane r of a 64-byte line is row r, at the file's own bit width (a Q4_0 panel is as
// many bytes as its 16 rows). Decode and prefill both read them: a thread streams its panels
// front to back (one stream, which the prefetchers follow), 16 rows share every load of x, and
// no panel is built per call.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "core/tensor.h"
#include "core/thread_pool.h"
#include "ops/matmul_q8a.h"

namespace g4::cpu {

inline constexpr int64_t kQ8aPanelRows = 16;

// Whether PackQ8aPanels packs weights of this kind (and K: a multiple of 32).
bool PacksQ8aPanels(QuantKind kind, int64_t K);

// The panels of a 2-D w (PacksQ8aPanels), built on the pool's threads; the caller sets them in
// w.quant (SetPanels) and keeps them alive while w is used.
PackedWeight PackQ8aPanels(ThreadPool& pool, const TensorView& w);

// The panels of an [N, K] weight of kind (Q4_0, Q5_0 or Q8_0) whose rows exist only a panel at a
// time: fill(p, rows) writes the rows of panel p (min(16, N - 16p) of them, K's blocks each,
// back to back) and returns false to give up, which gives null panels. One pass, no copy of the
// whole weight (int4 groups turned into Q4_0, matmul_q8a_int4.h).
using PanelRowsFn = std::function<bool(int64_t p, uint8_t* rows)>;
PackedWeight PackQ8aPanelsFrom(ThreadPool& pool, QuantKind kind, int64_t N, int64_t K,
                               const PanelRowsFn& fill);

// y: [T, N] = x: [T, K] w^T with x's rows quantized as MatMulQ8a does, through w.quant.panels.
// Only where AVX-512 F/BW/VL + VNNI run (the caller's path choice).
void MatMulQ8aPacked(ThreadPool& pool, const TensorView& w, const float* x, int64_t T, float* y);
// The same where AVX2 runs (and AVX-512 VNNI does not, or a test pinned AVX2).
void MatMulQ8aPackedAvx2(ThreadPool& pool, const TensorView& w, const float* x, int64_t T,
                         float* y);

}  // namespace g4::cpu
