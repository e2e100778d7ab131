// CUDA attention (kernels/cuda/attention.h) against ref::Attention: head dims 256 and 512 (and
// 32, 96 for odd multiples of 32), GQA (8 query heads on 2 KV heads), MQA, sliding windows,
// empty slots (k_pos < 0), ring-ordered slots (positions not sorted), queries that see no key
// (zeros), decode (T = 1) and prefill (T = 37), and fixed-capacity views that are mostly empty
// slots (the kernel skips key tiles no query row sees; a visible key alone in its tile, at
// exactly a query's position, must not be skipped). Each case runs with the device's own plan and
// split choice, and with forced small key tiles (bc = 8) at 1, 3 and 7 key splits so that the
// tile loop, the partial states and the merge pass are all reached on any device.
// Tolerance: |out - ref| <= 2e-5 (values in [-1, 1], softmax in f32 with expf, ref in f64).
// A batch of items (a decode step's sequences) in one launch: each item bit for bit its own
// launch. The refusal on a device too small for any plan is checked without a GPU.
#include "kernels/cuda/attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/cuda/heavy_test_util.h"
#include "kernels/ref/kernels.h"

namespace g4::cuda {
namespace {

using testing::DeviceBytes;
using testing::SyncOrFail;
using testing::Upload;

struct AttnCase {
  std::string name;
  int64_t T, S, n_heads, n_kv_heads, head_dim;
  int32_t window;
  std::vector<int32_t> q_pos, k_pos;  // empty: filled by Fill()
};

std::vector<float> Random(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& f : v) f = d(rng);
  return v;
}

// Decode/prefill at the end of the cache: keys at 0..S-1, queries at the last T positions.
void Fill(AttnCase& c) {
  if (c.k_pos.empty()) {
    for (int64_t s = 0; s < c.S; ++s) c.k_pos.push_back(static_cast<int32_t>(s));
  }
  if (c.q_pos.empty()) {
    for (int64_t t = 0; t < c.T; ++t) c.q_pos.push_back(static_cast<int32_t>(c.S - c.T + t));
  }
}

std::vector<AttnCase> Cases() {
  std::vector<AttnCase> cases;
  cases.push_back({"decode hd256 gqa", 1, 77, 8, 2, 256, 0, {}, {}});
  cases.push_back({"decode hd512 mqa", 1, 129, 4, 1, 512, 0, {}, {}});
  cases.push_back({"prefill hd256 gqa window", 37, 37, 8, 2, 256, 16, {}, {}});
  cases.push_back({"prefill hd512 gqa", 37, 45, 4, 2, 512, 0, {}, {}});
  cases.push_back({"prefill hd512 window 5", 11, 40, 2, 1, 512, 5, {}, {}});
  cases.push_back({"hd32 mha", 5, 19, 3, 3, 32, 0, {}, {}});
  cases.push_back({"hd96 gqa window", 9, 33, 6, 2, 96, 7, {}, {}});
  {
    // A sliding ring: slot s holds position 40 + ((s + 5) % 12) for slots 0..11, slots 12..15
    // empty; queries at 50 and 51 with window 8; a third query at 3 sees nothing (zeros).
    AttnCase c{"ring with empty slots", 3, 16, 4, 2, 256, 8, {50, 51, 3}, {}};
    for (int s = 0; s < 16; ++s) c.k_pos.push_back(s < 12 ? 40 + (s + 5) % 12 : -1);
    cases.push_back(c);
  }
  {
    // Every slot empty: all outputs zero.
    AttnCase c{"all slots empty", 2, 9, 2, 1, 512, 0, {4, 5}, {}};
    for (int s = 0; s < 9; ++s) c.k_pos.push_back(-1);
    cases.push_back(c);
  }
  {
    // A full-attention layer's fixed-capacity view: 40 keys in slots 0..39, the other 960
    // slots empty; queries at 39, 12 and 0 see 40, 13 and 1 keys.
    AttnCase c{"capacity 1000, 40 keys", 3, 1000, 8, 2, 256, 0, {39, 12, 0}, {}};
    for (int s = 0; s < 1000; ++s) c.k_pos.push_back(s < 40 ? s : -1);
    cases.push_back(c);
  }
  {
    // Keys scattered over a mostly empty capacity: positions 0..39 in slots 0..39, 40..45 in
    // slots 300..305 and 46 alone in slot 520 (its own tile at any bc). Window 8: the query at
    // 46 sees slots 39, 300..305 and 520; the one at 20 only slots 13..20.
    AttnCase c{"capacity 600 scattered, window 8", 2, 600, 4, 1, 512, 8, {46, 20}, {}};
    for (int s = 0; s < 600; ++s) {
      c.k_pos.push_back(s < 40 ? s : s >= 300 && s < 306 ? 40 + (s - 300) : s == 520 ? 46 : -1);
    }
    cases.push_back(c);
  }
  for (AttnCase& c : cases) Fill(c);
  return cases;
}

AttentionPlan SmallPlan(int64_t head_dim, const DeviceLimits& dev) {
  AttentionPlan p;
  p.head_dim = static_cast<int>(head_dim);
  p.bc = 8;
  p.warps = kAttentionWarps;
  p.rows_per_warp = head_dim <= 256 ? 4 : 2;
  p.smem_bytes = AttentionSmemBytes(head_dim, p.bc, p.warps, p.rows_per_warp);
  p.needs_optin = p.smem_bytes > dev.smem_default;
  return p;
}

TEST(CudaAttentionTest, MatchesReference) {
  G4_SKIP_WITHOUT_GPU(dev);
  ThreadPool pool(1);
  for (const AttnCase& c : Cases()) {
    const int64_t qn = c.T * c.n_heads * c.head_dim, kn = c.S * c.n_kv_heads * c.head_dim;
    const std::vector<float> q = Random(qn, 1), k = Random(kn, 2), v = Random(kn, 3);
    AttentionArgs h;
    h.q = q.data();
    h.k = k.data();
    h.v = v.data();
    h.q_pos = c.q_pos.data();
    h.k_pos = c.k_pos.data();
    h.T = c.T, h.S = c.S, h.n_heads = c.n_heads, h.n_kv_heads = c.n_kv_heads;
    h.head_dim = c.head_dim;
    h.window = c.window;
    h.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
    std::vector<float> ref(static_cast<size_t>(qn));
    h.out = ref.data();
    ref::Attention(pool, h);

    DeviceBytes dq = Upload(q), dk = Upload(k), dv = Upload(v), dqp = Upload(c.q_pos),
                dkp = Upload(c.k_pos), dout(static_cast<size_t>(qn) * 4);
    AttentionArgs a = h;
    a.q = dq.as<float>();
    a.k = dk.as<float>();
    a.v = dv.as<float>();
    a.q_pos = dqp.as<int32_t>();
    a.k_pos = dkp.as<int32_t>();
    a.out = dout.as<float>();
    auto check = [&](const std::string& what, const Status& st) {
      SCOPED_TRACE(c.name + ": " + what);
      ASSERT_TRUE(st.ok()) << st.ToString();
      SyncOrFail();
      const std::vector<float> out = dout.Download<float>(static_cast<size_t>(qn));
      for (int64_t i = 0; i < qn; ++i) {
        ASSERT_NEAR(out[i], ref[i], 2e-5) << "element " << i << " (t=" << i / (c.n_heads * c.head_dim)
                                          << ")";
      }
      // Poison the output so the next run cannot pass on this run's values.
      ASSERT_EQ(cudaMemset(dout.get(), 0x7f, static_cast<size_t>(qn) * 4), cudaSuccess);
    };
    check("device plan", AttentionDevice(a, dev, nullptr));
    for (int splits : {1, 3, 7}) {
      check("bc 8, splits " + std::to_string(splits),
            AttentionDeviceWithPlan(a, SmallPlan(c.head_dim, dev), splits, nullptr));
    }
    // Merged by the last split of each tile (counters): bit for bit the merge kernel's output,
    // twice in a row (a run must leave its counters zero); with too few counters, the kernel.
    constexpr int64_t kCounters = 64;
    DeviceBytes counters(kCounters * sizeof(unsigned));
    ASSERT_EQ(cudaMemset(counters.get(), 0, kCounters * sizeof(unsigned)), cudaSuccess);
    auto result = [&] {
      SyncOrFail();
      std::vector<float> out = dout.Download<float>(static_cast<size_t>(qn));
      EXPECT_EQ(cudaMemset(dout.get(), 0x7f, static_cast<size_t>(qn) * 4), cudaSuccess);
      return out;
    };
    const AttentionPlan plan = SmallPlan(c.head_dim, dev);
    for (int splits : {3, 7}) {
      SCOPED_TRACE(c.name + ": merged by the last split, splits " + std::to_string(splits));
      ASSERT_TRUE(AttentionDeviceWithPlan(a, plan, splits, nullptr).ok());
      const std::vector<float> by_kernel = result();
      for (int run = 0; run < 2; ++run) {
        ASSERT_TRUE(AttentionDeviceWithPlan(a, plan, splits, nullptr, counters.as<unsigned>(),
                                            kCounters)
                        .ok());
        EXPECT_EQ(result(), by_kernel) << "run " << run;
      }
    }
    check("splits 3, one counter (the merge kernel when tiles x heads > 1)",
          AttentionDeviceWithPlan(a, plan, 3, nullptr, counters.as<unsigned>(), 1));
  }
}

// One item of a batch: host inputs, the ref output, and device copies.
struct BatchItem {
  AttnCase c;
  std::vector<float> q, k, v, ref;
  std::unique_ptr<DeviceBytes> dq, dk, dv, dqp, dkp, dout;
  AttentionArgs args;  // on the device
  int64_t qn() const { return c.T * c.n_heads * c.head_dim; }
  std::vector<float> Out() const {
    SyncOrFail();
    std::vector<float> out = dout->Download<float>(static_cast<size_t>(qn()));
    EXPECT_EQ(cudaMemset(dout->get(), 0x7f, static_cast<size_t>(qn()) * 4), cudaSuccess);
    return out;
  }
};

// A device copy of v (4 bytes, zero, when v is empty: a valid pointer for an empty item).
template <typename T>
std::unique_ptr<DeviceBytes> UploadOrEmpty(const std::vector<T>& v) {
  const void* host = v.empty() ? nullptr : v.data();
  return std::make_unique<DeviceBytes>(v.empty() ? 4 : v.size() * sizeof(T), host);
}

// A decode step's items in one launch: each item's output is bit for bit what its own launch
// with the same plan and splits gives (so the batch's indexing, split extents and counters
// are each item's), and within the tolerance of the ref with the device's own choice. Items of
// unequal T and S, a window, an item with no keys (zeros) and one with no queries.
TEST(CudaAttentionTest, BatchIsEachItemInOneLaunch) {
  G4_SKIP_WITHOUT_GPU(dev);
  ThreadPool pool(1);
  std::vector<AttnCase> cases = {{"decode", 1, 77, 8, 2, 256, 0, {}, {}},
                                 {"decode window", 1, 20, 8, 2, 256, 16, {}, {}},
                                 {"chunk", 5, 40, 8, 2, 256, 0, {}, {}},
                                 {"no keys", 1, 0, 8, 2, 256, 0, {0}, {}},
                                 {"no queries", 0, 9, 8, 2, 256, 0, {}, {}},
                                 {"decode long", 1, 150, 8, 2, 256, 0, {}, {}}};
  std::vector<BatchItem> items(cases.size());
  uint32_t seed = 60;
  for (size_t i = 0; i < cases.size(); ++i) {
    BatchItem& it = items[i];
    it.c = cases[i];
    Fill(it.c);
    const AttnCase& c = it.c;
    const int64_t kn = c.S * c.n_kv_heads * c.head_dim;
    it.q = Random(it.qn(), ++seed), it.k = Random(kn, ++seed), it.v = Random(kn, ++seed);
    AttentionArgs h;
    h.q = it.q.data(), h.k = it.k.data(), h.v = it.v.data();
    h.q_pos = c.q_pos.data(), h.k_pos = c.k_pos.data();
    h.T = c.T, h.S = c.S, h.n_heads = c.n_heads, h.n_kv_heads = c.n_kv_heads;
    h.head_dim = c.head_dim, h.window = c.window, h.scale = 0.0625f;
    it.ref.assign(static_cast<size_t>(it.qn()), 0.0f);
    h.out = it.ref.data();
    if (c.T > 0) ref::Attention(pool, h);
    it.dq = UploadOrEmpty(it.q), it.dk = UploadOrEmpty(it.k), it.dv = UploadOrEmpty(it.v);
    it.dqp = UploadOrEmpty(c.q_pos), it.dkp = UploadOrEmpty(c.k_pos);
    it.dout = std::make_unique<DeviceBytes>(static_cast<size_t>(it.qn() > 0 ? it.qn() : 1) * 4);
    it.args = h;
    it.args.q = it.dq->as<float>(), it.args.k = it.dk->as<float>(), it.args.v = it.dv->as<float>();
    it.args.q_pos = it.dqp->as<int32_t>(), it.args.k_pos = it.dkp->as<int32_t>();
    it.args.out = it.dout->as<float>();
  }
  const int n = static_cast<int>(items.size());
  std::vector<AttentionArgs> args;
  for (const BatchItem& it : items) args.push_back(it.args);
  const AttentionPlan plan = SmallPlan(256, dev);
  constexpr int64_t kCounters = 64;
  DeviceBytes counters(kCounters * sizeof(unsigned));
  ASSERT_EQ(cudaMemset(counters.get(), 0, kCounters * sizeof(unsigned)), cudaSuccess);
  for (const std::vector<int>& splits : {std::vector<int>{1, 1, 1, 1, 1, 1},
                                         std::vector<int>{3, 2, 1, 4, 5, 7}}) {
    SCOPED_TRACE("splits " + std::to_string(splits[1]));
    std::vector<std::vector<float>> alone;
    for (int i = 0; i < n; ++i) {
      ASSERT_TRUE(AttentionDeviceWithPlan(args[i], plan, splits[i], nullptr).ok());
      alone.push_back(items[i].Out());
    }
    ASSERT_TRUE(AttentionBatchWithPlan(args.data(), n, plan, splits.data(), nullptr).ok());
    for (int i = 0; i < n; ++i) EXPECT_EQ(items[i].Out(), alone[i]) << items[i].c.name;
    for (int run = 0; run < 2; ++run) {  // merged in the kernel; the counters left at zero
      ASSERT_TRUE(AttentionBatchWithPlan(args.data(), n, plan, splits.data(), nullptr,
                                         counters.as<unsigned>(), kCounters)
                      .ok());
      for (int i = 0; i < n; ++i) {
        EXPECT_EQ(items[i].Out(), alone[i]) << items[i].c.name << ", counters, run " << run;
      }
    }
  }
  ASSERT_TRUE(AttentionBatchDevice(args.data(), n, dev, nullptr, counters.as<unsigned>(),
                                   kCounters)
                  .ok());
  for (int i = 0; i < n; ++i) {
    const std::vector<float> out = items[i].Out();
    for (int64_t e = 0; e < items[i].qn(); ++e) {
      ASSERT_NEAR(out[e], items[i].ref[e], 2e-5) << items[i].c.name << " element " << e;
    }
  }
  // Items of another shape, and batches of 0 or more than kMaxAttentionBatch, are refused.
  args[1].n_kv_heads = 1;
  EXPECT_EQ(AttentionBatchDevice(args.data(), n, dev, nullptr).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(AttentionBatchDevice(args.data(), 0, dev, nullptr).code(),
            StatusCode::kInvalidArgument);
  std::vector<AttentionArgs> many(kMaxAttentionBatch + 1, args[0]);
  EXPECT_EQ(AttentionBatchDevice(many.data(), kMaxAttentionBatch + 1, dev, nullptr).code(),
            StatusCode::kInvalidArgument);
}

TEST(CudaAttentionTest, TooSmallDeviceIsRefusedBeforeAnyLaunch) {
  float buf[8] = {};
  int32_t pos[1] = {0};
  AttentionArgs a;
  a.q = a.k = a.v = buf;
  a.out = buf;
  a.q_pos = a.k_pos = pos;
  a.T = a.S = 1;
  a.n_heads = a.n_kv_heads = 1;
  a.head_dim = 512;
  DeviceLimits tiny;
  tiny.cc = 80;
  tiny.sm_count = 1;
  tiny.smem_default = tiny.smem_optin = 16 * 1024;
  const Status st = AttentionDevice(a, tiny, nullptr);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), "attention tile needs required = " +
                              std::to_string(AttentionSmemBytes(512, 8, 4, 2)) +
                              " bytes of shared memory per block, available = 16384 (device "
                              "opt-in limit)");
}

TEST(CudaAttentionTest, BadArgsAreInvalidArguments) {
  float buf[8] = {};
  int32_t pos[1] = {0};
  AttentionArgs a;
  a.q = a.k = a.v = a.out = buf;
  a.q_pos = a.k_pos = pos;
  a.T = a.S = 1;
  a.n_heads = 3;
  a.n_kv_heads = 2;  // 3 % 2 != 0
  a.head_dim = 256;
  DeviceLimits dev;
  dev.smem_default = dev.smem_optin = 1 << 20;
  EXPECT_EQ(AttentionDevice(a, dev, nullptr).code(), StatusCode::kInvalidArgument);
  a.n_heads = 2;
  a.head_dim = 100;  // not a multiple of 32
  EXPECT_EQ(AttentionDevice(a, dev, nullptr).code(), StatusCode::kInvalidArgument);
  a.head_dim = 256;
  AttentionPlan wrong = SmallPlan(512, dev);  // plan for another head_dim
  EXPECT_EQ(AttentionDeviceWithPlan(a, wrong, 1, nullptr).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace g4::cuda
