// CUDA KvWrite (kernels.h: cuda::dev::KvWrite on device pointers, cuda::KvWrite on host
// pointers) against a plain loop over the contract of ops/kv_write.h: odd row sizes (smaller and
// larger than a block's threads), a ring that wraps (window 8), full-attention slots (window 0),
// and skipped rows (a negative position, a slot past the capacity). The caches start random with
// positions 1000 + slot, so a slot written by mistake, or one left unwritten, shows.
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_test_util.h"
#include "kernels/cuda/device_buffers.h"
#include "kernels/cuda/staged_ops.h"
#include "kernels/test_util.h"

namespace g4::cuda {
namespace {

using testing::CudaOpTest;
using testing::OnDevice;
using testing::ToHostVector;
using g4::testing::RandomFloats;

class CudaKvWriteTest : public CudaOpTest {};

struct KvCase {
  std::string name;
  int64_t row, capacity;
  int32_t window;
  std::vector<int32_t> pos;
};

std::vector<KvCase> Cases() {
  return {
      {"window 0, row 37", 37, 20, 0, {3, 4, 5, 6, 7}},
      {"ring wraps, row 301", 301, 8, 8, {6, 7, 8, 9, 10, 11}},
      {"ring, row 1, one row", 1, 8, 8, {13}},
      // -1: skipped; 25 >= capacity 20: skipped; the rest written.
      {"skipped rows, row 129", 129, 20, 0, {-1, 2, 25, 19, -7, 0}},
      // A ring over fewer slots than its window (capacity 5, window 8): slots 5..7 skipped.
      {"ring past capacity, row 64", 64, 5, 8, {4, 5, 6, 7, 8}},
  };
}

struct Caches {
  std::vector<float> k, v;
  std::vector<int32_t> pos;
};

Caches Initial(const KvCase& c, uint32_t seed) {
  Caches h;
  h.k = RandomFloats(c.capacity * c.row, seed);
  h.v = RandomFloats(c.capacity * c.row, seed + 1);
  for (int64_t s = 0; s < c.capacity; ++s) h.pos.push_back(static_cast<int32_t>(1000 + s));
  return h;
}

// The contract of ops/kv_write.h, written out.
void Expected(const KvCase& c, const std::vector<float>& k, const std::vector<float>& v,
              Caches* h) {
  for (size_t r = 0; r < c.pos.size(); ++r) {
    const int32_t p = c.pos[r];
    if (p < 0) continue;
    const int64_t slot = c.window > 0 ? p % c.window : p;
    if (slot >= c.capacity) continue;
    for (int64_t i = 0; i < c.row; ++i) {
      h->k[static_cast<size_t>(slot * c.row + i)] = k[r * static_cast<size_t>(c.row) + i];
      h->v[static_cast<size_t>(slot * c.row + i)] = v[r * static_cast<size_t>(c.row) + i];
    }
    h->pos[static_cast<size_t>(slot)] = p;
  }
}

TEST_F(CudaKvWriteTest, DeviceAndStagedMatchTheContract) {
  uint32_t seed = 700;
  for (const KvCase& c : Cases()) {
    SCOPED_TRACE(c.name);
    const int64_t C = static_cast<int64_t>(c.pos.size());
    const std::vector<float> k = RandomFloats(C * c.row, ++seed);
    const std::vector<float> v = RandomFloats(C * c.row, ++seed);
    const Caches start = Initial(c, ++seed);
    Caches want = start;
    Expected(c, k, v, &want);

    // On DeviceMemory, every pointer a device pointer (the kCuda op).
    Buffer<float> dk = OnDevice(k), dv = OnDevice(v), dkc = OnDevice(start.k),
                  dvc = OnDevice(start.v);
    Buffer<int32_t> dpos = OnDevice(c.pos), dpc = OnDevice(start.pos);
    KvWriteArgs a;
    a.k = dk.data(), a.v = dv.data(), a.pos = dpos.data();
    a.C = C, a.row = c.row, a.window = c.window, a.capacity = c.capacity;
    a.k_cache = dkc.data(), a.v_cache = dvc.data(), a.pos_cache = dpc.data();
    dev::KvWrite(pool_, a);
    EXPECT_EQ(ToHostVector(dkc), want.k);
    EXPECT_EQ(ToHostVector(dvc), want.v);
    EXPECT_EQ(ToHostVector(dpc), want.pos);

    // Host pointers (staged).
    Caches h = start;
    KvWriteArgs ha = a;
    ha.k = k.data(), ha.v = v.data(), ha.pos = c.pos.data();
    ha.k_cache = h.k.data(), ha.v_cache = h.v.data(), ha.pos_cache = h.pos.data();
    staged::Ops().kv_write(pool_, ha);
    EXPECT_EQ(h.k, want.k);
    EXPECT_EQ(h.v, want.v);
    EXPECT_EQ(h.pos, want.pos);
  }
}

}  // namespace
}  // namespace g4::cuda
