// The NormRope cases (norm_rope_test.h) on the CPU backend's table (the SIMD RmsNorm, then the
// ref Rope) on every Highway target this machine runs, pools of 1 and 3 threads; and the op's
// contract: per-head norm with the weight, then the rotation of each pair (j, j + D/2) by
// positions[t] * inv_freq[j]; no rotation in a part without rope (a layer's v); the KV store of
// the final k and v. Tolerance as RmsNorm's (rms_norm_test.h): 1e-5 of the head's largest |ref|.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/norm_rope_test.h"
#include "kernels/ref/kernels.h"
#include "kernels/test_util.h"
#include "ops/backend.h"

namespace g4 {
namespace testing {

INSTANTIATE_TEST_SUITE_P(Cpu, NormRopeTest, ::testing::ValuesIn(CpuOpBackends()),
                         OpBackendName);

}  // namespace testing

namespace {

using testing::InvFreq;
using testing::MaxRowError;
using testing::RandomFloats;
using testing::StoredTensor;

// A layer's three parts as the model passes them: q (H heads, q_norm, rotated), k (Hk heads,
// k_norm, rotated), v (Hk heads, no weight, not rotated).
struct Parts {
  std::vector<float> q, k, v;
  NormRopeArgs Args(const TensorView* wq, const TensorView* wk, const int32_t* pos, int64_t T,
                    int64_t H, int64_t Hk, int64_t D, const float* inv_freq) {
    NormRopeArgs a;
    a.positions = pos, a.T = T, a.D = D, a.eps = 1e-6f, a.inv_freq = inv_freq;
    return a.Add(q.data(), wq, H, true).Add(k.data(), wk, Hk, true).Add(v.data(), nullptr, Hk,
                                                                          false);
  }
};

// One head of D = 4 by hand: the norm, then pair (0, 2) rotated by 0.5 rad, pair (1, 3) not; a
// second part with rope = false and no weight is only normalized, in the same call.
TEST(NormRopeContract, RefIsNormThenRotation) {
  ThreadPool pool(1);
  std::vector<float> x = {1.0f, -2.0f, 3.0f, 0.5f};
  std::vector<float> v = x;
  const std::vector<float> wv = {1.0f, 2.0f, 0.5f, 1.0f};
  const std::vector<float> inv = {0.25f, 0.0f};
  const int32_t pos = 2;
  const double inv_rms = 1.0 / std::sqrt((1 + 4 + 9 + 0.25) / 4.0 + 1e-6);
  const double n[4] = {1 * inv_rms, -4 * inv_rms, 1.5 * inv_rms, 0.5 * inv_rms};
  const TensorView w{wv.data(), DType::kF32, {4}};
  NormRopeArgs a;
  a.positions = &pos, a.T = 1, a.D = 4, a.eps = 1e-6f, a.inv_freq = inv.data();
  ref::NormRope(pool, a.Add(x.data(), &w, 1, true).Add(v.data(), nullptr, 1, false));
  const double c = std::cos(0.5), s = std::sin(0.5);
  EXPECT_NEAR(x[0], n[0] * c - n[2] * s, 1e-6);
  EXPECT_NEAR(x[2], n[2] * c + n[0] * s, 1e-6);
  EXPECT_NEAR(x[1], n[1], 1e-6);
  EXPECT_NEAR(x[3], n[3], 1e-6);
  const double plain[4] = {1 * inv_rms, -2 * inv_rms, 3 * inv_rms, 0.5 * inv_rms};
  for (int d = 0; d < 4; ++d) EXPECT_NEAR(v[static_cast<size_t>(d)], plain[d], 1e-6) << d;
}

// With kv the op also stores k and v, once final, in their cache slots: the CPU table's op
// against ref::NormRope then ref::KvWrite (a plain copy, bit for bit).
TEST(NormRopeContract, KvWriteStoresTheFinalKAndV) {
  ThreadPool pool(2);
  const NormRopeFn cpu = GetOpTable(BackendKind::kCpu).norm_rope;
  const int64_t T = 2, H = 2, Hk = 1, D = 8, capacity = 4;
  const std::vector<float> inv = InvFreq(D, 1e4, D / 2);
  const std::vector<int32_t> pos = {5, 6};
  const StoredTensor w(RandomFloats(D, 3, -0.5f, 2.0f), DType::kBF16, {D}, false);
  Parts x{RandomFloats(T * H * D, 4), RandomFloats(T * Hk * D, 5), RandomFloats(T * Hk * D, 6)};
  Parts ref = x;
  std::vector<float> kc(capacity * Hk * D, 0.0f), vc = kc, ref_kc = kc, ref_vc = kc;
  std::vector<int32_t> pc(capacity, -1), ref_pc = pc;
  const TensorView wv = w.view();
  auto kv_of = [&](Parts& p, std::vector<float>& k_cache, std::vector<float>& v_cache,
                   std::vector<int32_t>& pos_cache) {
    KvWriteArgs kv;
    kv.k = p.k.data(), kv.v = p.v.data(), kv.pos = pos.data();
    kv.C = T, kv.row = Hk * D, kv.window = capacity, kv.capacity = capacity;
    kv.k_cache = k_cache.data(), kv.v_cache = v_cache.data(), kv.pos_cache = pos_cache.data();
    return kv;
  };
  const KvWriteArgs kv = kv_of(x, kc, vc, pc), ref_kv = kv_of(ref, ref_kc, ref_vc, ref_pc);
  NormRopeArgs a = x.Args(&wv, &wv, pos.data(), T, H, Hk, D, inv.data());
  a.kv = &kv;
  a.kv_count = 1;
  cpu(pool, a);
  ref::NormRope(pool, ref.Args(&wv, &wv, pos.data(), T, H, Hk, D, inv.data()));
  ref::KvWrite(pool, ref_kv);
  EXPECT_LE(MaxRowError(x.k, ref.k, D), 1e-5);
  EXPECT_EQ(kc[1 * D], x.k[0]);  // position 5: slot 1 holds row 0's final k
  EXPECT_EQ(vc[2 * D + 3], x.v[D + 3]);  // position 6: slot 2, row 1's final v
  EXPECT_EQ(pc, ref_pc);
  EXPECT_LE(MaxRowError(kc, ref_kc, D), 1e-5);
  EXPECT_LE(MaxRowError(vc, ref_vc, D), 1e-5);
}

}  // namespace
}  // namespace g4
