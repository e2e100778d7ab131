// NormRope: Gemma 4's per-head query/key/value normalization, with RoPE on q and k, as one op,
// in place. For each part p < count, x = parts[p].x: [T, H_p, D]:
//   x[t, h] = Rope(RmsNorm(x[t, h]) * w_p, positions[t], inv_freq)   (rope and inv_freq set)
//   x[t, h] = RmsNorm(x[t, h]) * w_p                                  (otherwise)
// RmsNorm as ops/rms_norm.h over each head's D values (w_p: [D], null or empty: no weight);
// Rope as ops/rope.h (NeoX half split, angles in f64). A layer's q, k and v (v: no weight, no
// rotation) are one op because a device runs each op as its own launch (a recorded decode step
// is a chain of them) while every head needs only its own D values. Parts must not overlap.
// With kv, the op also stores a layer's k and v (parts 1 and 2), once final, into KV caches as
// KvWrite(kv[j]) does for each write (ops/kv_write.h): at decode the cache writes of a batch's
// items are part of the same launch.
#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "core/thread_pool.h"
#include "ops/kv_write.h"

namespace g4 {

struct NormRopePart {
  float* x = nullptr;             // [T, H, D]
  const TensorView* w = nullptr;  // [D]; null or empty: no weight
  int64_t H = 0;
  bool rope = true;               // false: the norm only
};

inline constexpr int kMaxNormRopeParts = 3;
// The most KV writes one NormRope takes (a decode batch's items, one row each).
inline constexpr int kMaxNormRopeKvWrites = 8;

struct NormRopeArgs {
  NormRopePart parts[kMaxNormRopeParts];
  int count = 0;
  const int32_t* positions = nullptr;  // [T] absolute positions
  int64_t T = 0, D = 0;
  float eps = 0.0f;
  const float* inv_freq = nullptr;     // [D/2]; nullptr: no part rotates
  // Optional: kv[0..kv_count) (at most kMaxNormRopeKvWrites), KvWrites of rows of parts[1] (k)
  // and parts[2] (v) after the norms: write j covers rows [r_j, r_j + kv[j].C) of both
  // (kv[j].k == parts[1].x + r_j * row, kv[j].v == parts[2].x + r_j * row, r_j + C <= T,
  // row == kv[j].row == H * D of both), and the writes' rows are disjoint.
  const KvWriteArgs* kv = nullptr;
  int kv_count = 0;

  // Appends a part; returns *this so a layer's parts read as one expression.
  NormRopeArgs& Add(float* x, const TensorView* w, int64_t H, bool rope) {
    parts[count++] = NormRopePart{x, w, H, rope};
    return *this;
  }
};

using NormRopeOp = void(ThreadPool& pool, const NormRopeArgs& args);
using NormRopeFn = NormRopeOp*;

// The op as its steps, for a backend without a fused kernel: norm(x, w, rows) in place for
// each part (w empty: no weight; rows = T * H), then rotate(x, H) where the part rotates, then
// kv_write(kv[j]) for each KV write.
template <class Norm, class Rotate, class Write>
void NormRopeEach(const NormRopeArgs& a, Norm&& norm, Rotate&& rotate, Write&& kv_write) {
  for (int p = 0; p < a.count; ++p) {
    const NormRopePart& part = a.parts[p];
    norm(part.x, part.w != nullptr ? *part.w : TensorView{}, a.T * part.H);
    if (part.rope && a.inv_freq != nullptr) rotate(part.x, part.H);
  }
  for (int j = 0; j < a.kv_count; ++j) kv_write(a.kv[j]);
}

// norm_rope(a without its KV writes), then kv_write(kv[j]) for each write: how a backend runs
// writes its fused launch cannot take.
template <class Op, class Write>
void NormRopeThenWrites(const NormRopeArgs& a, Op&& norm_rope, Write&& kv_write) {
  NormRopeArgs norms = a;
  norms.kv = nullptr;
  norms.kv_count = 0;
  norm_rope(norms);
  for (int j = 0; j < a.kv_count; ++j) kv_write(a.kv[j]);
}

}  // namespace g4
