// The NormRope cases (kernels/norm_rope_test.h) on the CUDA device; and KV writes in the launch
// (NormRopeArgs::kv) on device buffers: the launch's own cache stores against NormRope then
// KvWrite, bit for bit (a ring slot, a full cache, a skipped negative position and one past the
// capacity, a write of some of the rows, a batch of one-row writes into two caches, and a write the
// launch cannot take, which runs as KvWrite; a full cache through a block table). Tolerance 3e-5 of
// the head's largest |ref| (the norm's f32 sum of squares, rms_norm_test.h).
#include <algorithm>
#include <cmath>
#include <optional>
#include <random>
#include <vector>

#include "kernels/cuda/cuda_test_util.h"
#include "kernels/cuda/device_buffers.h"
#include "kernels/cuda/staged_ops.h"
#include "kernels/norm_rope_test.h"
#include "kernels/ref/kernels.h"
#include "kernels/test_util.h"

namespace g4 {
namespace testing {

INSTANTIATE_TEST_SUITE_P(Cuda, NormRopeTest, ::testing::ValuesIn(cuda::staged::OpBackends()),
                         OpBackendName);

}  // namespace testing

namespace cuda {
namespace {

using g4::testing::InvFreq;
using g4::testing::MaxRowError;
using g4::testing::RandomFloats;
using g4::testing::StoredTensor;
using testing::CudaOpTest;

class CudaNormRopeTest : public CudaOpTest {};

// A write of rows [first, first + C) into cache `cache` (0 or 1); first = -1: a write the launch
// cannot take (its k and v start half a row in), which runs as its own KvWrite.
struct KvCaseWrite {
  int64_t first, C;
  int cache;
};
struct KvCase {
  const char* name;
  std::vector<int32_t> pos;
  int32_t window;
  int64_t capacity;
  std::vector<KvCaseWrite> writes;
  int32_t block = 0;           // paged (ops/kv_blocks.h): blocks of `block` slots at
  std::vector<int32_t> table = {};  // these blocks of the arrays (a permutation of them)
};

TEST_F(CudaNormRopeTest, KvWritesInTheLaunchAreNormRopeThenKvWrite) {
  using testing::OnDevice;
  using testing::ToHostVector;
  const int64_t H = 3, Hk = 2, D = 36;
  const std::vector<float> inv = InvFreq(D, 1e4, D / 2);
  const StoredTensor wq(RandomFloats(D, 1, -0.5f, 2.0f), DType::kBF16, {D}, false);
  const StoredTensor wk(RandomFloats(D, 2, -0.5f, 2.0f), DType::kF32, {D}, false);
  const KvCase cases[] = {
      {"ring slot", {12}, 5, 5, {{0, 1, 0}}},
      {"full cache", {4, 5, 6}, 0, 16, {{0, 3, 0}}},
      {"skipped rows", {-1, 7, 20}, 0, 16, {{0, 3, 0}}},
      {"part of the rows", {3, 4}, 0, 8, {{1, 1, 0}}},
      {"a batch: one row per write, two caches", {9, 2, 30, 11}, 6, 6,
       {{0, 1, 0}, {1, 1, 1}, {2, 1, 0}, {3, 1, 1}}},
      {"not the launch's", {3, 4}, 0, 8, {{-1, 1, 0}}},
      {"paged full cache", {1, 2, 3, 4}, 0, 6, {{0, 4, 0}}, 2, {2, 0, 1}},
  };
  uint32_t seed = 40;
  for (const KvCase& c : cases) {
    SCOPED_TRACE(c.name);
    const int64_t T = static_cast<int64_t>(c.pos.size()), row = Hk * D;
    const std::vector<float> q = RandomFloats(T * H * D, ++seed), k = RandomFloats(T * row, ++seed),
                             v = RandomFloats(T * row, ++seed);
    const std::vector<float> kc = RandomFloats(c.capacity * row, ++seed),
                             vc = RandomFloats(c.capacity * row, ++seed);
    const std::vector<int32_t> pc(static_cast<size_t>(c.capacity), -1);
    struct Dev {
      Buffer<float> q, k, v, kc[2], vc[2];
      Buffer<int32_t> pos, pc[2], table;
    };
    auto make = [&] {
      return Dev{OnDevice(q),
                 OnDevice(k),
                 OnDevice(v),
                 {OnDevice(kc), OnDevice(kc)},
                 {OnDevice(vc), OnDevice(vc)},
                 OnDevice(c.pos),
                 {OnDevice(pc), OnDevice(pc)},
                 OnDevice(c.table)};
    };
    auto args = [&](Dev& d, NormRopeArgs* a, std::vector<KvWriteArgs>* kv) {
      const TensorView& q_norm = wq.view();
      const TensorView& k_norm = wk.view();
      a->positions = d.pos.data(), a->T = T, a->D = D, a->eps = 1e-6f;
      a->inv_freq = nullptr;
      a->Add(d.q.data(), &q_norm, H, true).Add(d.k.data(), &k_norm, Hk, true);
      a->Add(d.v.data(), nullptr, Hk, false);
      for (const KvCaseWrite& w : c.writes) {
        KvWriteArgs x;
        const int64_t off = w.first < 0 ? row / 2 : w.first * row;
        x.k = d.k.data() + off, x.v = d.v.data() + off;
        x.pos = d.pos.data() + (w.first < 0 ? 0 : w.first);
        x.C = w.C, x.row = row, x.window = c.window, x.capacity = c.capacity;
        x.k_cache = d.kc[w.cache].data(), x.v_cache = d.vc[w.cache].data();
        x.pos_cache = d.pc[w.cache].data();
        if (c.block > 0) x.block_table = d.table.data(), x.block_size = c.block;
        kv->push_back(x);
      }
    };
    Buffer<float> dinv = OnDevice(inv);
    Dev fused = make(), parts = make();
    NormRopeArgs a, b;
    std::vector<KvWriteArgs> kv_a, kv_b;
    args(fused, &a, &kv_a);
    args(parts, &b, &kv_b);
    a.inv_freq = b.inv_freq = dinv.data();
    a.kv = kv_a.data();
    a.kv_count = static_cast<int>(kv_a.size());
    dev::NormRope(pool_, a);
    dev::NormRope(pool_, b);
    for (const KvWriteArgs& w : kv_b) dev::KvWrite(pool_, w);
    EXPECT_EQ(ToHostVector(fused.q), ToHostVector(parts.q));
    EXPECT_EQ(ToHostVector(fused.k), ToHostVector(parts.k));
    EXPECT_EQ(ToHostVector(fused.v), ToHostVector(parts.v));
    for (int i = 0; i < 2; ++i) {
      EXPECT_EQ(ToHostVector(fused.kc[i]), ToHostVector(parts.kc[i])) << i;
      EXPECT_EQ(ToHostVector(fused.vc[i]), ToHostVector(parts.vc[i])) << i;
      EXPECT_EQ(ToHostVector(fused.pc[i]), ToHostVector(parts.pc[i])) << i;
    }
    EXPECT_NE(ToHostVector(parts.kc[0]), kc) << "the writes wrote nothing";
  }
  ReleaseDeviceMemory();  // wq, wk die here (kernels.h)
}

}  // namespace
}  // namespace cuda
}  // namespace g4
