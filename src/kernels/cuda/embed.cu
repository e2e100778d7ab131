// CUDA Embed (ops/embed.h): out[t] = widen(table[ids[t]]) * scale, one block per token. The
// table is uploaded once, as stored (F32/BF16/F16; a gather reads each row once, so converting
// would only cost memory). Tables larger than a quarter of device memory stay in host memory and
// are gathered by the CPU kernel: Gemma 4 E2B's per-layer-embedding table is 4.7 GB in bf16, which
// a 16 GB T4 should not spend on a gather of T rows; an H200 uploads it. Quantized tables are
// gathered on the host too: the ids are copied to the host and the rows back (kernels.h).
#include "kernels/cpu/kernels.h"
#include "kernels/cuda/device_context.h"
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/load.cuh"
#include "kernels/ref/kernels.h"

namespace g4::cuda {
namespace {

template <ElemType E>
__global__ void EmbedKernel(const void* table, const int32_t* ids, int64_t D, float scale,
                            float* out) {
  GridDependency();
  const int64_t row = static_cast<int64_t>(ids[blockIdx.x]) * D;
  float* o = out + blockIdx.x * D;
  for (int64_t d = threadIdx.x; d < D; d += blockDim.x) o[d] = LoadF32<E>(table, row + d) * scale;
}

}  // namespace

// True when `table` is gathered on the device (see the file comment).
bool EmbedOnDevice(const TensorView& table) {
  if (table.quantized() || !IsFloat(table.dtype) || table.shape.size() != 2) return false;
  const DeviceContext* dc = DeviceContext::Current();
  if (dc == nullptr) return false;
  const int64_t budget = dc->policy().device.global_mem_bytes / 4;
  return static_cast<int64_t>(table.nbytes()) <= budget;
}

namespace dev {

void Embed(ThreadPool& pool, const TensorView& table, const int32_t* ids, int64_t T, float scale,
           float* out) {
  DeviceContext* dc = ActiveDevice();
  if (T <= 0 || dc == nullptr) return;
  const int64_t D = table.dim(1), n = T * D;
  if (!EmbedOnDevice(table)) {
    if (dc->CaptureRefuses("embedding table " + ShapeToString(table.shape) + " " +
                           StorageName(table) + " is gathered on the host")) {
      return;
    }
    // The ids come to the host, the rows go back: T ids and T * D floats, not the table.
    auto* hids = HostScratchOf<int32_t>(0, T);
    float* hout = HostScratchOf<float>(1, n);
    if (!dc->ToHost(hids, ids, static_cast<size_t>(T) * sizeof(int32_t))) return;
    // The CPU kernel covers float and GGUF-block tables; int4/int8 groups only the ref's at().
    if (table.quantized() && !IsGgufBlock(table.quant.kind)) {
      ref::Embed(pool, table, hids, T, scale, hout);
    } else {
      cpu::Embed(pool, table, hids, T, scale, hout);
    }
    dc->ToDevice(out, hout, static_cast<size_t>(n) * sizeof(float));
    return;
  }
  const TensorView* dt = dc->DeviceWeight(table, /*convert_to_compute=*/false);
  if (dt == nullptr) return;
  const unsigned blocks = static_cast<unsigned>(T);
  cudaStream_t s = dc->stream();
  switch (table.dtype) {
    case DType::kF32:
      LaunchKernel(EmbedKernel<ElemType::kF32>, blocks, 256, 0, s, dt->data, ids, D, scale, out);
      break;
    case DType::kBF16:
      LaunchKernel(EmbedKernel<ElemType::kBF16>, blocks, 256, 0, s, dt->data, ids, D, scale, out);
      break;
    default:
      LaunchKernel(EmbedKernel<ElemType::kF16>, blocks, 256, 0, s, dt->data, ids, D, scale, out);
      break;
  }
  dc->Launched("embed");
}

}  // namespace dev
}  // namespace g4::cuda
