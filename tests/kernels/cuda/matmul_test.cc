// CUDA dense MatMul (kernels/cuda/matmul.h) against ref::MatMul on the same stored weights:
// F32/BF16/F16, T in {1, 3, 17, 70} (GEMV, GEMV in two launches, GEMM with partial and several
// row tiles), odd N and K (scalar GEMV path, GEMM tile edges) and K a multiple of 8 (16-byte
// GEMV loads). Both paths are run for every T, and MatMulDevice's own dispatch once more; with
// 16-bit weights at GEMM rows, the tensor-core GEMM in every tile shape that fits the device.
// Tolerance: |y - ref| <= 3e-5 * sum_k |x_k w_k| + 1e-6 (f32 accumulation in another order, x
// as hi + lo parts on tensor cores; the ref accumulates in f64). Skips without a CUDA device.
#include "kernels/cuda/matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
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

std::vector<float> Random(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& f : v) f = d(rng);
  return v;
}

// values stored as `dtype` (rounded to nearest even), as raw bytes.
std::vector<uint8_t> Store(const std::vector<float>& values, DType dtype) {
  std::vector<uint8_t> bytes(values.size() * DTypeSize(dtype));
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == DType::kF32) {
      std::memcpy(bytes.data() + 4 * i, &values[i], 4);
    } else {
      const uint16_t b = dtype == DType::kBF16 ? F32ToBf16(values[i]) : F32ToF16(values[i]);
      std::memcpy(bytes.data() + 2 * i, &b, 2);
    }
  }
  return bytes;
}

enum class Path { kGemv, kGemm, kDispatch };

// tile: the GEMM's (kGemm), or null for its own choice.
void CheckCase(DType dtype, int64_t T, int64_t N, int64_t K, Path path, const DeviceLimits& dev,
               const GemmTile* tile = nullptr) {
  SCOPED_TRACE(std::string(DTypeName(dtype)) + " T=" + std::to_string(T) + " N=" +
               std::to_string(N) + " K=" + std::to_string(K) + " path=" +
               std::to_string(static_cast<int>(path)) +
               (tile ? " tile " + std::to_string(tile->bm) + "x" + std::to_string(tile->bn) +
                           "x" + std::to_string(tile->stages)
                     : std::string()));
  const std::vector<uint8_t> wbytes = Store(Random(N * K, 1 + N + K), dtype);
  const std::vector<float> x = Random(T * K, 7 + T);
  const TensorView host_w(wbytes.data(), dtype, {N, K});
  std::vector<float> ref(static_cast<size_t>(T * N));
  ThreadPool pool(1);
  ref::MatMul(pool, host_w, x.data(), T, ref.data());

  DeviceBytes dw = Upload(wbytes), dx = Upload(x), dy(static_cast<size_t>(T * N) * 4);
  const TensorView w(dw.get(), dtype, {N, K});
  Status st;
  switch (path) {
    case Path::kGemv: st = DenseGemvDevice(w, dx.as<float>(), T, dy.as<float>(), nullptr); break;
    case Path::kGemm:
      st = DenseGemmDevice(w, dx.as<float>(), T, dy.as<float>(), dev, nullptr, tile);
      break;
    case Path::kDispatch:
      st = MatMulDevice(w, dx.as<float>(), T, dy.as<float>(), dev, nullptr);
      break;
  }
  ASSERT_TRUE(st.ok()) << st.ToString();
  SyncOrFail();
  const std::vector<float> y = dy.Download<float>(static_cast<size_t>(T * N));
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t n = 0; n < N; ++n) {
      double mag = 0.0;
      for (int64_t k = 0; k < K; ++k) mag += std::fabs(x[t * K + k] * host_w.at(n * K + k));
      ASSERT_NEAR(y[t * N + n], ref[t * N + n], 3e-5 * mag + 1e-6) << "t=" << t << " n=" << n;
    }
  }
}

TEST(CudaMatMulTest, DenseMatchesReferenceOnOddSizes) {
  G4_SKIP_WITHOUT_GPU(dev);
  struct Size {
    int64_t N, K;
  };
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    for (int64_t T : {1, 3, 17, 70}) {
      for (Size s : {Size{67, 131}, Size{129, 1000}, Size{5, 8}, Size{1, 3}}) {
        for (Path p : {Path::kGemv, Path::kGemm, Path::kDispatch}) {
          CheckCase(dtype, T, s.N, s.K, p, dev);
        }
        if (T > kGemvMaxT && dtype != DType::kF32) {
          for (const GemmTile& tile : testing::GemmTilesFitting(dev, 1)) {
            CheckCase(dtype, T, s.N, s.K, Path::kGemm, dev, &tile);
          }
        }
      }
    }
  }
}

TEST(CudaMatMulTest, RejectsBadShapesWithoutLaunching) {
  // No device needed: validation happens before anything touches the GPU.
  float dummy = 0.0f;
  DeviceLimits dev;
  const TensorView one_dim(&dummy, DType::kF32, {4});
  EXPECT_EQ(MatMulDevice(one_dim, &dummy, 1, &dummy, dev, nullptr).code(),
            StatusCode::kInvalidArgument);
  const TensorView ints(&dummy, DType::kI32, {2, 2});
  EXPECT_EQ(MatMulDevice(ints, &dummy, 1, &dummy, dev, nullptr).code(),
            StatusCode::kInvalidArgument);
  const TensorView ok(&dummy, DType::kF32, {2, 2});
  EXPECT_EQ(MatMulDevice(ok, &dummy, -1, &dummy, dev, nullptr).code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace g4::cuda
