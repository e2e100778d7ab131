// Attention (ops/attention.h) against ref::Attention on every backend (op_backend.h): head dims
// 1/16/17/32/256/512, MHA, GQA and MQA, prefill with empty trailing slots, a ring-buffer KV cache
// whose slot order is not position order, sliding windows (the q - k < window boundary included),
// random positions with empty slots and queries that see no key (which must get exact zeros),
// misaligned buffers, K/V read in slot order or through a block table whose blocks are scattered
// among unused ones (ops/kv_blocks.h), K/V stored as f32, bf16 or q8 (the CPU reads the same stored
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

// K/V as a cache of `dtype` holds them, rounded from f32 rows [entries, KV, D] each (bf16: k16,
// v16; q8: k8, v8 and their blocks' scales), one element in when misaligned.
class StoredKv {
 public:
  StoredKv(const std::vector<float>& k, const std::vector<float>& v, KvDtype dtype,
           bool misalign)
      : dtype_(dtype), off_(misalign ? 1 : 0), k_(k, misalign), v_(v, misalign) {
    const int64_t n = static_cast<int64_t>(k.size());
    if (dtype == KvDtype::kBF16) {
      k16_.resize(static_cast<size_t>(n + 1));
      v16_.resize(k16_.size());
      for (int64_t i = 0; i < n; ++i) {
        k16_[off_ + i] = F32ToBf16(k[i]);
        v16_[off_ + i] = F32ToBf16(v[i]);
      }
    } else if (dtype == KvDtype::kQ8) {  // head_dim % kQ8Block == 0
      k8_.resize(static_cast<size_t>(n + 1));
      v8_.resize(k8_.size());
      ks_.resize(static_cast<size_t>(n / kQ8Block));
      vs_.resize(ks_.size());
      QuantizeQ8Blocks(k.data(), n, k8_.data() + off_, ks_.data(), nullptr);
      QuantizeQ8Blocks(v.data(), n, v8_.data() + off_, vs_.data(), nullptr);
    }
  }

  // Points a's K/V at these arrays.
  void Point(AttentionArgs* a) const {
    if (dtype_ == KvDtype::kBF16) {
      a->k16 = k16_.data() + off_;
      a->v16 = v16_.data() + off_;
    } else if (dtype_ == KvDtype::kQ8) {
      a->k8 = k8_.data() + off_;
      a->v8 = v8_.data() + off_;
      a->k_scale8 = ks_.data();
      a->v_scale8 = vs_.data();
    } else {
      a->k = k_.data();
      a->v = v_.data();
    }
  }

 private:
  KvDtype dtype_;
  size_t off_;
  FloatBuffer k_, v_;
  std::vector<uint16_t> k16_, v16_;
  std::vector<int8_t> k8_, v8_;
  std::vector<float> ks_, vs_;
};

// A paged cache (ops/kv_blocks.h) of S slots: blocks of a size that divides S (sizes that are
// and are not powers of two, by seed) and a table that scatters them over S / block + 2 blocks.
struct PagedLayout {
  int32_t block = 1;
  std::vector<int32_t> table;  // [S / block]
  int64_t blocks = 0;          // in the arrays

  PagedLayout(int64_t S, uint32_t seed) {
    const int32_t sizes[] = {16, 6, 5, 4, 3, 2, 1};
    for (int i = 0; i < 7; ++i) {
      const int32_t b = sizes[(seed + i) % 7];
      if (S % b == 0) {
        block = b;
        break;
      }
    }
    blocks = S / block + 2;
    std::vector<int32_t> all(static_cast<size_t>(blocks));
    for (int64_t i = 0; i < blocks; ++i) all[static_cast<size_t>(i)] = static_cast<int32_t>(i);
    std::shuffle(all.begin(), all.end(), std::mt19937(seed));
    table.assign(all.begin(), all.begin() + S / block);
  }

  // x: [S, row] by slot -> the arrays' [blocks * block, row]; entries no slot uses hold 1e30,
  // which a read of a wrong entry carries into the output.
  std::vector<float> Scatter(const std::vector<float>& x, int64_t row) const {
    std::vector<float> out(static_cast<size_t>(blocks * block * row), 1e30f);
    const int64_t S = static_cast<int64_t>(table.size()) * block;
    for (int64_t s = 0; s < S; ++s) {
      const int64_t e = int64_t{table[static_cast<size_t>(s / block)]} * block + s % block;
      std::copy_n(x.begin() + s * row, row, out.begin() + e * row);
    }
    return out;
  }
};

// Runs `attention` and the ref; returns max |o - ref| / max|v| and checks that (t, h) rows with
// no visible key are exactly zero in the output.
// dtype: K/V handed to both kernels as stored in a cache of that dtype (bf16: k16, v16; q8: k8,
// v8 and their blocks' scales), rounded from the same random values. paged: `attention` reads
// them through a block table (PagedLayout), the ref in slot order.
inline double RunAndCompare(AttentionFn attention, ThreadPool& pool, Layout layout,
                            const AttentionShape& s, bool misalign, uint32_t seed,
                            float perturb = 0.0f, KvDtype dtype = KvDtype::kF32,
                            bool paged = false) {
  std::vector<int32_t> q_pos, k_pos;
  MakePositions(layout, s, seed, &q_pos, &k_pos);
  const FloatBuffer q(RandomFloats(s.T * s.H * s.D, seed + 1), misalign);
  const std::vector<float> k = RandomFloats(s.S * s.KV * s.D, seed + 2);
  const std::vector<float> v = RandomFloats(s.S * s.KV * s.D, seed + 3, -2.0f, 2.0f);
  FloatBuffer out(s.T * s.H * s.D, misalign);
  for (int64_t i = 0; i < s.T * s.H * s.D; ++i) out.data()[i] = NAN;  // must all be written
  std::vector<float> ref(static_cast<size_t>(s.T * s.H * s.D));

  AttentionArgs a;
  a.q = q.data();
  a.q_pos = q_pos.data();
  a.k_pos = k_pos.data();
  a.T = s.T;
  a.S = s.S;
  a.n_heads = s.H;
  a.n_kv_heads = s.KV;
  a.head_dim = s.D;
  a.window = s.window;
  a.scale = s.scale;
  const StoredKv slots(k, v, dtype, misalign);
  slots.Point(&a);
  a.out = ref.data();
  ref::Attention(pool, a);
  const PagedLayout layout_p(paged ? s.S : 1, seed);
  const int64_t row = s.KV * s.D;
  const StoredKv entries(paged ? layout_p.Scatter(k, row) : std::vector<float>(),
                         paged ? layout_p.Scatter(v, row) : std::vector<float>(), dtype, misalign);
  if (paged) {
    entries.Point(&a);
    a.block_table = layout_p.table.data();
    a.block_size = layout_p.block;
  }
  a.out = out.data();
  attention(pool, a);

  double vmax = 0.0;
  for (int64_t i = 0; i < s.S * s.KV * s.D; ++i) {
    vmax = std::max<double>(vmax, std::fabs(v[static_cast<size_t>(i)]));
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
            const bool paged = (seed & 16) != 0;  // K/V through a block table
            SCOPED_TRACE(std::string(LayoutName(layout)) + " D=" + std::to_string(D) +
                         " H=" + std::to_string(H) + " KV=" + std::to_string(KV) +
                         " T=" + std::to_string(T) + " S=" + std::to_string(S) +
                         " window=" + std::to_string(window) + " scale=" + std::to_string(scale) +
                         " misalign=" + std::to_string(misalign) +
                         " kv=" + KvDtypeName(dtype) + " paged=" + std::to_string(paged));
            ASSERT_LE(RunAndCompare(ops().attention, pool(), layout, s, misalign, seed++,
                                    0.0f, dtype, paged),
                      tol);
          }
        }
      }
    }
  }
}

}  // namespace g4::testing
