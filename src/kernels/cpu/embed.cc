// CPU Embed: out[t] = widen(table[ids[t]]) * scale, Highway SIMD with runtime dispatch; must
// match g4::ref::Embed (src/kernels/ref/embed.cc) exactly: widening is exact and the ref's f64
// product of two f32 values rounded to f32 equals the f32 product. table: [V, D] F32/BF16/F16
// (ids in [0, V), validated by callers); ids: [T]; out: [T, D] f32. Tokens are split across the
// pool's threads (only prefill and the wide per-layer-embedding tables have enough work).

#include <algorithm>
#include <cstdint>
#include <cstring>

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

namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;

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
  switch (table.dtype) {
    case DType::kF32:
      EmbedTyped(pool, static_cast<const float*>(table.data), ids, T, D, scale, out);
      break;
    case DType::kBF16:
      EmbedTyped(pool, static_cast<const hwy::bfloat16_t*>(table.data), ids, T, D, scale, out);
      break;
    case DType::kF16:
      EmbedTyped(pool, static_cast<const hwy::float16_t*>(table.data), ids, T, D, scale, out);
      break;
    default:  // not a float dtype: callers validate; match ref, which reads such tables as 0
      std::memset(out, 0, static_cast<size_t>(T * D) * sizeof(float));
      break;
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace g4::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace g4::cpu {

HWY_EXPORT(EmbedImpl);

void Embed(ThreadPool& pool, const TensorView& table, const int32_t* ids, int64_t T, float scale,
           float* out) {
  HWY_DYNAMIC_DISPATCH(EmbedImpl)(pool, table, ids, T, scale, out);
}

}  // namespace g4::cpu
#endif  // HWY_ONCE
