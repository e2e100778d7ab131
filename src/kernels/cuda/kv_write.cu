// CUDA KvWrite (ops/kv_write.h): one block per chunk row, its threads over the row. Each block
// reads its row's position from device memory and computes the slot there, so a recorded
// decode step (ops/graph.h) writes the slot of whatever position it finds at launch. Rows with
// a negative position or a slot past the capacity are skipped, as in ref::KvWrite.
#include <cstdint>
#include <string>

#include "kernels/cuda/device_context.h"
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/kv_write.cuh"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/load.cuh"

namespace g4::cuda {
namespace {

constexpr int kKvThreads = 128;

// k, v: [C, row]; pos: [C]; k_cache, v_cache: [capacity, row]; pos_cache: [capacity].
// block_table: [capacity / block_size] or null (ops/kv_blocks.h).
__global__ void KvWriteKernel(const float* k, const float* v, const int32_t* pos, int64_t row,
                              int32_t window, int64_t base, int64_t capacity, float* k_cache,
                              float* v_cache, int32_t* pos_cache, const int32_t* block_table,
                              int32_t block_size) {
  GridDependency();
  const int64_t r = blockIdx.x;
  const int32_t p = pos[r];
  const int64_t slot = KvSlot(p, window, base, capacity);
  if (slot < 0) return;  // block-uniform: no barrier below
  const int64_t e = KvEntry(block_table, block_size, slot);
  const float* ks = k + r * row;
  const float* vs = v + r * row;
  float* kd = k_cache + e * row;
  float* vd = v_cache + e * row;
  for (int64_t i = threadIdx.x; i < row; i += blockDim.x) {
    kd[i] = ks[i];
    vd[i] = vs[i];
  }
  if (threadIdx.x == 0) pos_cache[slot] = p;
}

}  // namespace

namespace dev {

void KvWrite(ThreadPool&, const KvWriteArgs& a) {
  DeviceContext* dc = ActiveDevice();
  if (a.C <= 0 || dc == nullptr) return;
  if (a.C > 0x7fffffff || a.row < 0) {
    dc->Ok(InvalidArgument("KvWrite: C = " + std::to_string(a.C) + ", row = " +
                           std::to_string(a.row) + " outside the kernel's grid"),
           "kv_write");
    return;
  }
  LaunchKernel(KvWriteKernel, static_cast<unsigned>(a.C), kKvThreads, 0, dc->stream(), a.k, a.v,
               a.pos, a.row, a.window, a.base, a.capacity, a.k_cache, a.v_cache, a.pos_cache,
               a.block_table, a.block_size);
  dc->Launched("kv_write");
}

}  // namespace dev

}  // namespace g4::cuda
