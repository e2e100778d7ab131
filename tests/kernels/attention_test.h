// Attention (ops/attention.h) against ref::Attention on every backend (op_backend.h): head dims
// 1/16/17/32/256/512, MHA, GQA and MQA, prefill with empty trailing slots, a ring-buffer KV cache
// whose slot order is not position order, sliding windows (the q - k < window boundary
// included), random positions with empty slots and queries that see no key (which must get
// exact zeros), misaligned buffers, K/V stored as f32, bf16 or q8 (the CPU reads the same stored
// values as the ref, widened exactly (q8: times the block's scale in f32, one rounding), so the
// tolerance is the same; a CUDA cache is f32 only).
// Tolerance: |o - ref| <= 5e-6 * max|v| on the CPU. The output is a convex combination of V
// rows, so its error is max|v| times (the relative error of the softmax weights + the f32
// rounding of the weighted sum): scores are f32 dot products of ~|s| <= 6 here with ~1e-6
// absolute error, exp adds 1 ulp, and the sum over <= 64 keys adds ~64 * 2^-24. Measured
// errors are ~1e-7 on every target. CUDA (expf, tensor-core tiles): 1e-5 * max|v|
// (cuda/attention_test.cc covers the device kernel's tiles and splits).
// A wrong mask, window boundary or KV head changes outputs by ~0.1 * max|v|.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "core/q8_blocks.h"
#include "kernels/op_backend.h"
#include "kernels/ref/kernels.h"
#include "kernels/test_util.h"

namespace g4::testing {

inline constexpr double kAttentionCpuTol = 5e-6;

enum class Layout { kPrefill, kRing, kRandom, kAllEmpty };

inline const char* LayoutName(Layout l) {
  switch (l) {
    case Layout::kPrefill: return "prefill";
    case Layout::kRing: return "ring";
    case Layout::kRandom: return "random";
    case Layout::kAllEmpty: return "all_empty";
  }
  return "?";
}

struct AttentionShape {
  int64_t T, S, H, KV, D;
  int32_t window;
  float scale;
};

// q_pos: [T], k_pos: [S] for a layout.
inline void MakePositions(Layout layout, const AttentionShape& s, uint32_t seed,
                          std::vector<int32_t>* q_pos, std::vector<int32_t>* k_pos) {
  q_pos->assign(static_cast<size_t>(s.T), 0);
  k_pos->assign(static_cast<size_t>(s.S), -1);
  std::mt19937 rng(seed);
  switch (layout) {
    case Layout::kPrefill: {
      // Slots [0, filled) hold positions 0..filled-1; the rest are empty; the T queries are the
      // last T filled positions (or 0..T-1 if fewer are filled).
      const int64_t filled = s.S - s.S / 5;
      for (int64_t i = 0; i < filled; ++i) (*k_pos)[i] = static_cast<int32_t>(i);
      const int64_t first = std::max<int64_t>(0, filled - s.T);
      for (int64_t t = 0; t < s.T; ++t) (*q_pos)[t] = static_cast<int32_t>(first + t);
      break;
    }
    case Layout::kRing: {
      // Position p lives in slot p % S; the cache holds the last S positions up to P.
      const int32_t P = 50 + static_cast<int32_t>(s.T);
      for (int32_t p = P - static_cast<int32_t>(s.S) + 1; p <= P; ++p) {
        if (p >= 0) (*k_pos)[p % s.S] = p;
      }
      for (int64_t t = 0; t < s.T; ++t) (*q_pos)[t] = P - static_cast<int32_t>(s.T) + 1 + t;
      break;
    }
    case Layout::kRandom: {
      std::uniform_int_distribution<int32_t> kd(-5, 40), qd(-2, 40);
      for (auto& p : *k_pos) p = kd(rng);
      for (auto& p : *q_pos) p = qd(rng);
      break;
    }
    case Layout::kAllEmpty:
      for (int64_t t = 0; t < s.T; ++t) (*q_pos)[t] = static_cast<int32_t>(t);
      break;
  }
}

inline bool Visible(int32_t qp, int32_t kp, int32_t window) {
  return kp >= 0 && kp <= qp && (window <= 0 || qp - kp < window);
}

// Runs `attention` and the ref; returns max |o - ref| / max|v| and checks that (t, h) rows with
// no visible key are exactly zero in the output.
// dtype: K/V handed to both kernels as stored in a cache of that dtype (bf16: k16, v16; q8: k8,
// v8 and their blocks' scales), rounded from the same random values.
inline double RunAndCompare(AttentionFn attention, ThreadPool& pool, Layout layout,
                            const AttentionShape& s, bool misalign, uint32_t seed,
                            float perturb = 0.0f, KvDtype dtype = KvDtype::kF32) {
  std::vector<int32_t> q_pos, k_pos;
  MakePositions(layout, s, seed, &q_pos, &k_pos);
  const FloatBuffer q(RandomFloats(s.T * s.H * s.D, seed + 1), misalign);
  const FloatBuffer k(RandomFloats(s.S * s.KV * s.D, seed + 2), misalign);
  const FloatBuffer v(RandomFloats(s.S * s.KV * s.D, seed + 3, -2.0f, 2.0f), misalign);
  FloatBuffer out(s.T * s.H * s.D, misalign);
  for (int64_t i = 0; i < s.T * s.H * s.D; ++i) out.data()[i] = NAN;  // must all be written
  std::vector<float> ref(static_cast<size_t>(s.T * s.H * s.D));

  // bf16 copies, one element in when misaligned (2-byte aligned only).
  const int64_t n_kv = s.S * s.KV * s.D;
  std::vector<uint16_t> k16(static_cast<size_t>(n_kv + 1)), v16(k16.size());
  const size_t off = misalign ? 1 : 0;
  for (int64_t i = 0; i < n_kv; ++i) {
    k16[off + i] = F32ToBf16(k.data()[i]);
    v16[off + i] = F32ToBf16(v.data()[i]);
  }
  // q8 blocks (head_dim % kQ8Block == 0), the values one byte in when misaligned.
  const bool q8 = dtype == KvDtype::kQ8;
  std::vector<int8_t> k8(q8 ? static_cast<size_t>(n_kv + 1) : 0), v8(k8.size());
  std::vector<float> k_scale(q8 ? static_cast<size_t>(n_kv / kQ8Block) : 0);
  std::vector<float> v_scale(k_scale.size());
  if (q8) {
    QuantizeQ8Blocks(k.data(), n_kv, k8.data() + off, k_scale.data(), nullptr);
    QuantizeQ8Blocks(v.data(), n_kv, v8.data() + off, v_scale.data(), nullptr);
  }

  AttentionArgs a;
  a.q = q.data();
  if (dtype == KvDtype::kBF16) {
    a.k16 = k16.data() + off;
    a.v16 = v16.data() + off;
  } else if (q8) {
    a.k8 = k8.data() + off;
    a.v8 = v8.data() + off;
    a.k_scale8 = k_scale.data();
    a.v_scale8 = v_scale.data();
  } else {
    a.k = k.data();
    a.v = v.data();
  }
  a.q_pos = q_pos.data();
  a.k_pos = k_pos.data();
  a.T = s.T;
  a.S = s.S;
  a.n_heads = s.H;
  a.n_kv_heads = s.KV;
  a.head_dim = s.D;
  a.window = s.window;
  a.scale = s.scale;
  a.out = out.data();
  attention(pool, a);
  a.out = ref.data();
  ref::Attention(pool, a);

  double vmax = 0.0;
  for (int64_t i = 0; i < s.S * s.KV * s.D; ++i) {
    vmax = std::max<double>(vmax, std::fabs(v.data()[i]));
  }
  std::vector<float> o = out.ToVector(s.T * s.H * s.D);
  if (perturb != 0.0f) o[o.size() / 2] += perturb * static_cast<float>(vmax);
  double worst = 0.0;
  for (size_t i = 0; i < o.size(); ++i) {
    const double e = std::fabs(static_cast<double>(o[i]) - ref[i]) / vmax;
    if (!(e <= worst)) worst = e;  // also propagates NaN
  }
  for (int64_t t = 0; t < s.T; ++t) {
    bool any = false;
    for (int64_t j = 0; j < s.S; ++j) any = any || Visible(q_pos[t], k_pos[j], s.window);
    if (any) continue;
    for (int64_t i = t * s.H * s.D; i < (t + 1) * s.H * s.D; ++i) {
      EXPECT_EQ(o[i], 0.0f) << "t=" << t << " sees no key but got a nonzero output";
    }
  }
  return worst;
}

class AttentionTest : public OpBackendTest {};

TEST_P(AttentionTest, MatchesRef) {
  const bool device = backend().device;
  const double tol = device ? 1e-5 : kAttentionCpuTol;
  uint32_t seed = 100;
  // GQA groups: {8, 1} is Gemma 4's shape; with 3 threads T = 1 splits its 8 query heads into
  // groups of 3, 3, 2 (uneven), {5, 1} into 2, 2, 1.
  const std::pair<int64_t, int64_t> heads[] = {{1, 1}, {4, 4}, {8, 2}, {6, 1}, {8, 1}, {5, 1}};
  // {1, 300}: decode over >= 256 slots with fewer (token, KV head) pairs than threads splits the
  // keys across threads and merges the softmax parts (some parts see no key with window 5).
  // {11, 150}: prefill over more than one key block of 64 runs token tiles of 8 (one full, one
  // of 3) over the blocks (the last of 22 keys) with the softmax online.
  const std::pair<int64_t, int64_t> ts[] = {{1, 37}, {5, 9}, {3, 64}, {1, 300}, {11, 150}};
  for (int64_t D : {1, 16, 17, 32, 256, 512}) {
    for (auto [H, KV] : heads) {
      for (auto [T, S] : ts) {
        for (int32_t window : {0, 5}) {
          for (Layout layout :
               {Layout::kPrefill, Layout::kRing, Layout::kRandom, Layout::kAllEmpty}) {
            const bool misalign = (seed & 1) != 0;
            // A stored K/V dtype on about half the cases (a CUDA cache is f32 only): q8 where
            // the heads hold whole blocks, otherwise bf16.
            KvDtype dtype = KvDtype::kF32;
            if ((seed & 4) != 0 && !device) {
              dtype = (seed & 8) != 0 && D % kQ8Block == 0 ? KvDtype::kQ8 : KvDtype::kBF16;
            }
            // 1/sqrt(D) is the usual scale; Gemma 4 uses 1 (its q/k are RMS-normed), tried on
            // small D where the scores stay in a range where softmax is not one-hot.
            const float scale =
                D <= 17 && (seed & 2) ? 1.0f : 1.0f / std::sqrt(static_cast<float>(D));
            const AttentionShape s{T, S, H, KV, D, window, scale};
            SCOPED_TRACE(std::string(LayoutName(layout)) + " D=" + std::to_string(D) +
                         " H=" + std::to_string(H) + " KV=" + std::to_string(KV) +
                         " T=" + std::to_string(T) + " S=" + std::to_string(S) +
                         " window=" + std::to_string(window) + " scale=" + std::to_string(scale) +
                         " misalign=" + std::to_string(misalign) +
                         " kv=" + KvDtypeName(dtype));
            ASSERT_LE(RunAndCompare(ops().attention, pool(), layout, s, misalign, seed++,
                                    0.0f, dtype),
                      tol);
          }
        }
      }
    }
  }
}

}  // namespace g4::testing
