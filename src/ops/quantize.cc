// Scalar weight quantizer; see quantize.h for the scheme and core/tensor.h for the layouts.
// Load-time only (the LM head copy is ~400M elements: a few seconds on one core, split over
// the pool), so plain code is enough.
#include "ops/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/gguf_blocks.h"
#include "ops/quantize_gguf.h"

namespace g4 {
namespace {

void StoreScale(float s, DType t, void* scales, int64_t i) {
  if (t == DType::kF32) {
    static_cast<float*>(scales)[i] = s;
  } else {
    static_cast<uint16_t*>(scales)[i] = t == DType::kBF16 ? F32ToBf16(s) : F32ToF16(s);
  }
}

}  // namespace

int64_t QuantRowBytes(QuantKind kind, int64_t K) {
  switch (kind) {
    case QuantKind::kInt4Group: return (K + 7) / 8 * 4;
    case QuantKind::kInt8Group: return K;
    default: return 0;  // kNone and the GGUF blocks: not made by this quantizer
  }
}

void QuantizeRow(const float* w, int64_t K, QuantKind kind, int64_t group, DType scale_dtype,
                 uint8_t* row, void* scales) {
  const bool int4 = kind == QuantKind::kInt4Group;
  const double half_range = int4 ? 7.5 : 127.0;
  const int qmin = int4 ? -8 : -127, qmax = int4 ? 7 : 127;
  std::memset(row, 0, static_cast<size_t>(QuantRowBytes(kind, K)));
  for (int64_t g = 0; g * group < K; ++g) {
    const float* wg = w + g * group;
    double absmax = 0.0;
    for (int64_t k = 0; k < group; ++k) absmax = std::max(absmax, std::fabs(double{wg[k]}));
    StoreScale(static_cast<float>(absmax / half_range), scale_dtype, scales, g);
    const float scale = LoadAsF32(scales, scale_dtype, g);  // the value readers will use
    for (int64_t k = 0; k < group; ++k) {
      int q = 0;
      if (scale > 0) {
        q = static_cast<int>(std::nearbyint(static_cast<double>(wg[k]) / scale));
        q = std::clamp(q, qmin, qmax);
      }
      const int64_t e = g * group + k;
      if (int4) {
        row[e / 2] |= static_cast<uint8_t>((q + 8) << (4 * (e % 2)));
      } else {
        row[e] = static_cast<uint8_t>(static_cast<int8_t>(q));
      }
    }
  }
}

StatusOr<QuantizedWeight> QuantizeWeight(ThreadPool& pool, const TensorView& w, QuantKind kind,
                                         int64_t group, DType scale_dtype) {
  // GGUF block rows (a Q6_K tied embedding re-quantized as an int8 head) are decoded a row at
  // a time; TensorView::at would decode a whole block per element.
  const bool gguf = w.quantized() && IsGgufBlock(w.quant.kind);
  if (w.shape.size() != 2 || (w.quantized() && !gguf) || (!gguf && !IsFloat(w.dtype)) ||
      w.empty()) {
    return InvalidArgument("QuantizeWeight: expected a 2-D float or GGUF block tensor, got " +
                           ShapeToString(w.shape) + " " + StorageName(w));
  }
  const int64_t N = w.dim(0), K = w.dim(1);
  const bool to_gguf = IsGgufBlock(kind);  // blocks carry their scales: group is theirs
  const BlockFormat f = to_gguf ? GgufBlockFormat(kind) : BlockFormat{};
  if (to_gguf) {
    if (!CanQuantizeGguf(kind) || K % f.elems != 0) {
      return InvalidArgument(std::string("QuantizeWeight: no ") + QuantKindName(kind) +
                             " quantizer for K = " + std::to_string(K));
    }
    group = f.elems;
  } else if (kind == QuantKind::kNone || group <= 0 || K % group != 0 || !IsFloat(scale_dtype)) {
    return InvalidArgument("QuantizeWeight: group " + std::to_string(group) +
                           " does not divide K = " + std::to_string(K));
  }
  const int64_t row_bytes = to_gguf ? K / f.elems * f.bytes : QuantRowBytes(kind, K);
  const int64_t groups = to_gguf ? 0 : K / group;
  const size_t data_bytes = static_cast<size_t>(N * row_bytes);
  const size_t scale_bytes = static_cast<size_t>(N * groups) * DTypeSize(scale_dtype);
  // One allocation: packed rows, then the scales (64-byte aligned so the scale rows start on a
  // cache line when the data size is a multiple of 64, as it is for model shapes).
  const size_t scale_offset = (data_bytes + 63) / 64 * 64;
  std::shared_ptr<uint8_t[]> buf(new (std::nothrow) uint8_t[scale_offset + scale_bytes + 64]);
  if (!buf) {
    return InvalidArgument("QuantizeWeight: cannot allocate " +
                           std::to_string(scale_offset + scale_bytes) + " bytes");
  }
  uint8_t* base = buf.get() + (64 - reinterpret_cast<uintptr_t>(buf.get()) % 64) % 64;
  uint8_t* data = base;
  uint8_t* scales = base + scale_offset;
  pool.ParallelFor(N, 256, [&](int64_t begin, int64_t end) {
    std::vector<float> row(static_cast<size_t>(K));
    for (int64_t n = begin; n < end; ++n) {
      if (gguf) {
        DequantizeGgufRow(w.quant.kind, static_cast<const uint8_t*>(w.data) + n * w.quant.row_bytes,
                          K, row.data());
      } else {
        for (int64_t k = 0; k < K; ++k) row[static_cast<size_t>(k)] = w.at(n * K + k);
      }
      if (to_gguf) {  // K and kind were checked above: it cannot fail
        (void)QuantizeGgufRow(kind, row.data(), K, data + n * row_bytes);
        continue;
      }
      QuantizeRow(row.data(), K, kind, group, scale_dtype, data + n * row_bytes,
                  scales + static_cast<size_t>(n * groups) * DTypeSize(scale_dtype));
    }
  });
  QuantizedWeight q;
  q.view = TensorView(data, kind == QuantKind::kInt8Group ? DType::kI8 : DType::kU8, {N, K},
                      QuantInfo{kind, to_gguf ? nullptr : scales, scale_dtype, group, row_bytes});
  q.storage = std::shared_ptr<const void>(buf, buf.get());
  return q;
}

}  // namespace g4
