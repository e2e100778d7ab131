// CUDA KvWrite (ops/kv_write.h): one block per chunk row, its threads over the row. Each block
// reads its row's position from device memory and computes the slot there, so a recorded
// decode step (ops/graph.h) writes the slot of whatever position it finds at launch. Rows with
// a negative position or a slot past the capacity are skipped, as in ref::KvWrite.
#include <cstddef>
#include <cstdint>
#include <limits>

#include "kernels/cuda/kernels.h"
#include "kernels/cuda/load.cuh"
#include "kernels/cuda/staging.h"

namespace g4::cuda {
namespace {

constexpr int kKvThreads = 128;

// k, v: [C, row]; pos: [C]; k_cache, v_cache: [capacity, row]; pos_cache: [capacity].
__global__ void KvWriteKernel(const float* k, const float* v, const int32_t* pos, int64_t row,
                              int32_t window, int64_t capacity, float* k_cache, float* v_cache,
                              int32_t* pos_cache) {
  const int64_t r = blockIdx.x;
  const int32_t p = pos[r];
  if (p < 0) return;  // block-uniform: no barrier below
  const int64_t slot = window > 0 ? p % window : p;
  if (slot >= capacity) return;
  const float* ks = k + r * row;
  const float* vs = v + r * row;
  float* kd = k_cache + slot * row;
  float* vd = v_cache + slot * row;
  for (int64_t i = threadIdx.x; i < row; i += blockDim.x) {
    kd[i] = ks[i];
    vd[i] = vs[i];
  }
  if (threadIdx.x == 0) pos_cache[slot] = p;
}

}  // namespace

namespace dev {

void KvWrite(ThreadPool&, const KvWriteArgs& a) {
  using namespace staging;
  if (a.C <= 0 || !Ready()) return;
  if (a.C > 0x7fffffff || a.row < 0) {
    Ok(InvalidArgument("KvWrite: C = " + std::to_string(a.C) + ", row = " +
                       std::to_string(a.row) + " outside the kernel's grid"),
       "kv_write");
    return;
  }
  KvWriteKernel<<<static_cast<unsigned>(a.C), kKvThreads, 0, Stream()>>>(
      a.k, a.v, a.pos, a.row, a.window, a.capacity, a.k_cache, a.v_cache, a.pos_cache);
  Launched("kv_write");
}

}  // namespace dev

// The host-pointer KvWrite: the caches are uploaded whole (the rows not written keep their
// contents), written on the device and downloaded. After a failure the caches are NaN and the
// positions INT32_MIN, never a plausible cache.
void KvWrite(ThreadPool& pool, const KvWriteArgs& a) {
  using namespace staging;
  if (a.C <= 0) return;
  const int64_t chunk = a.C * a.row, cache = a.capacity * a.row;
  const size_t fchunk = static_cast<size_t>(chunk) * sizeof(float);
  const size_t fcache = static_cast<size_t>(cache) * sizeof(float);
  const size_t pcache = static_cast<size_t>(a.capacity) * sizeof(int32_t);
  bool ok = Ready();
  KvWriteArgs d = a;
  auto stage = [&](int slot, const void* host, size_t bytes) -> void* {
    if (!ok) return nullptr;
    void* p = Scratch(slot, bytes);
    ok = p != nullptr && ToDevice(p, host, bytes);
    return p;
  };
  d.k = static_cast<const float*>(stage(0, a.k, fchunk));
  d.v = static_cast<const float*>(stage(1, a.v, fchunk));
  d.pos = static_cast<const int32_t*>(stage(2, a.pos, static_cast<size_t>(a.C) * sizeof(int32_t)));
  d.k_cache = static_cast<float*>(stage(3, a.k_cache, fcache));
  d.v_cache = static_cast<float*>(stage(4, a.v_cache, fcache));
  d.pos_cache = static_cast<int32_t*>(stage(5, a.pos_cache, pcache));
  if (ok) dev::KvWrite(pool, d);
  ok = ok && Sync("kv_write") && ToHost(a.k_cache, d.k_cache, fcache) &&
       ToHost(a.v_cache, d.v_cache, fcache) && ToHost(a.pos_cache, d.pos_cache, pcache);
  if (!ok) {
    FillNaN(a.k_cache, cache);
    FillNaN(a.v_cache, cache);
    for (int64_t i = 0; i < a.capacity; ++i) a.pos_cache[i] = std::numeric_limits<int32_t>::min();
  }
}

}  // namespace g4::cuda
