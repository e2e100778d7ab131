// CPU Embed: out[t] = widen(table[ids[t]]) * scale, Highway SIMD with runtime dispatch; must
// match g4::ref::Embed (src/kernels/ref/embed.cc) exactly: widening is exact and the ref's f64
// product of two f32 values rounded to f32 equals the f32 product. table: [V, D] F32/BF16/F16
// (ids in [0, V), validated by callers); ids: [T]; out: [T, D] f32. Tokens are split across the
// pool's threads (only prefill and the wide per-layer-embedding tables have enough work).

#include <algorithm>
#include <cstdint>

#include "core/gguf_blocks.h"
#include "kernels/cpu/kernels.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/embed.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/cpu/util-inl.h"

HWY_BEFORE_NAMESPACE();
namespace g4::cpu {
namespace HWY_NAMESPACE {
namespace {

template <typename TE>
void EmbedRows(const TE* table, const int32_t* ids, int64_t D, float scale, int64_t t_begin,
               int64_t t_end, float* out) {
  const DF df;
  const int64_t L = static_cast<int64_t>(hn::Lanes(df));
  const auto vscale = hn::Set(df, scale);
  for (int64_t t = t_begin; t < t_end; ++t) {
    const TE* row = table + static_cast<int64_t>(ids[t]) * D;
    float* o = out + t * D;
    int64_t d = 0;
    for (; d + L <= D; d += L) hn::StoreU(hn::Mul(LoadWidened(df, row + d), vscale), df, o + d);
    for (; d < D; ++d) o[d] = WidenScalar(row[d]) * scale;
  }
}

template <typename TE>
void EmbedTyped(ThreadPool& pool, const TE* table, const int32_t* ids, int64_t T, int64_t D,
                float scale, float* out) {
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 15) / std::max<int64_t>(1, D));
  pool.ParallelFor(T, grain, [&](int64_t begin, int64_t end) {
    EmbedRows(table, ids, D, scale, begin, end, out);
  });
}

}  // namespace

// table: [V, D]; ids: [T]; out: [T, D] f32.
void EmbedImpl(ThreadPool& pool, const TensorView& table, const int32_t* ids, int64_t T,
               float scale, float* out) {
  const int64_t D = table.dim(1);
  if (T <= 0 || D <= 0) return;
  ForFloatDType(table.dtype, table.data, out, T * D,
                [&](const auto* te) HWY_ATTR { EmbedTyped(pool, te, ids, T, D, scale, out); });
}

}  // namespace HWY_NAMESPACE
}  // namespace g4::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace g4::cpu {

HWY_EXPORT(EmbedImpl);

namespace {

// GGUF block tables (token_embd / per_layer_token_embd, Q6_K in Google's QAT GGUFs): each
// gathered row is dequantized by the reference block code (core/gguf_blocks.h; a row is a few
// thousand elements per token, not worth SIMD) and scaled in f32, as ref::Embed computes it.
void EmbedGguf(ThreadPool& pool, const TensorView& table, const int32_t* ids, int64_t T, float scale,
               float* out) {
  const int64_t D = table.dim(1);
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(1, D));
  pool.ParallelFor(T, grain, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      float* o = out + t * D;
      DequantizeGgufRow(table.quant.kind,
                        static_cast<const uint8_t*>(table.data) + static_cast<int64_t>(ids[t]) * table.quant.row_bytes,
                        D, o);
      for (int64_t d = 0; d < D; ++d) o[d] *= scale;
    }
  });
}

}  // namespace

void Embed(ThreadPool& pool, const TensorView& table, const int32_t* ids, int64_t T, float scale,
           float* out) {
  if (IsGgufBlock(table.quant.kind)) {
    EmbedGguf(pool, table, ids, T, scale, out);
    return;
  }
  HWY_DYNAMIC_DISPATCH(EmbedImpl)(pool, table, ids, T, scale, out);
}

}  // namespace g4::cpu
#endif  // HWY_ONCE
