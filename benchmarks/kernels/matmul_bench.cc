// Benchmarks of g4::cpu::MatMul with BF16 weights at Gemma 4 E2B shapes (attention/MLP
// projections and the 262144-row LM head), decode (T = 1) and a short prefill (T = 8), reported
// as bytes of weights read per second, next to a plain memory-read benchmark (summing a 1 GiB
// buffer) on the same thread pool. Decode is memory-bound, so the matvec GB/s should approach
// the read GB/s; a large gap means the kernel, not DRAM, is the bottleneck.
// Run: g4_kernel_bench [--benchmark_filter=...]; all threads of the machine are used.
// G4_BENCH_TARGET=AVX2 (any name from g4::cpu::AvailableTargets()) benchmarks that code path.

#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/tensor.h"
#include "core/thread_pool.h"
#include "kernels/cpu/kernels.h"

namespace g4 {
namespace {

ThreadPool& Pool() {
  static ThreadPool pool(0);  // one thread per hardware thread
  return pool;
}

// threads: 1, or 0 for the whole pool. One-thread runs compare per-core kernel speed with
// per-core read bandwidth, which stays meaningful on a machine shared with other jobs.
ThreadPool& PoolFor(int64_t threads) {
  static ThreadPool single(1);
  return threads == 1 ? single : Pool();
}

// Applies G4_BENCH_TARGET before any benchmark runs.
const bool kTargetSet = [] {
  const char* name = std::getenv("G4_BENCH_TARGET");
  if (name == nullptr || *name == '\0') return false;
  if (!cpu::SetTargetForTesting(name)) {
    std::fprintf(stderr, "G4_BENCH_TARGET=%s is not available here; using %s\n", name,
                 cpu::TargetName());
    return false;
  }
  return true;
}();

// The BF16 weight buffer of the current shape, kept across the runs Google Benchmark makes of
// one benchmark (the LM head is 768 MiB; refilling it per run would dominate the wall time).
struct Weights {
  int64_t n = 0, k = 0;
  std::unique_ptr<uint16_t[]> data;
};

const uint16_t* GetWeights(int64_t N, int64_t K) {
  static Weights w;
  if (w.n != N || w.k != K) {
    w.data.reset();  // free the previous shape first: peak memory stays one buffer
    w.data.reset(new uint16_t[static_cast<size_t>(N * K)]);
    uint16_t* p = w.data.get();
    // Small finite values (|w| < 0.1) from a cheap hash; filled in parallel (first touch).
    Pool().ParallelFor(N * K, int64_t{1} << 20, [p](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const uint32_t h = static_cast<uint32_t>(i) * 2654435761u;
        p[i] = F32ToBf16((static_cast<float>(h >> 8) / 16777216.0f - 0.5f) * 0.2f);
      }
    });
    w.n = N;
    w.k = K;
  }
  return w.data.get();
}

// args: N, K, T, threads (1, or 0 for the whole pool).
void BM_MatMulBf16(benchmark::State& state) {
  const int64_t N = state.range(0), K = state.range(1), T = state.range(2);
  ThreadPool& pool = PoolFor(state.range(3));
  const TensorView w{GetWeights(N, K), DType::kBF16, {N, K}};
  std::vector<float> x(static_cast<size_t>(T * K));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7) * 0.25f - 0.75f;
  std::vector<float> y(static_cast<size_t>(T * N));
  for (auto _ : state) {
    cpu::MatMul(pool, w, x.data(), T, y.data());
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  // Weight bytes only: they dominate traffic (x and y are KBs and stay in cache).
  state.SetBytesProcessed(state.iterations() * N * K * static_cast<int64_t>(sizeof(uint16_t)));
  state.SetLabel(std::string(cpu::TargetName()) + " threads=" + std::to_string(pool.size()));
}

// E2B: q/o-ish 2048x1536, MLP gate/up 6144x1536, MLP down 1536x6144, LM head 262144x1536.
// Decode (T = 1) on the whole pool and on one thread; T = 8 on the whole pool. Shapes are
// grouped so each weight buffer is built once. Note the three small ones (6-18 MiB) stay in a
// large L3 across iterations; only the LM head (768 MiB) measures DRAM.
void MatMulShapes(benchmark::internal::Benchmark* b) {
  const int64_t shapes[][2] = {{2048, 1536}, {6144, 1536}, {1536, 6144}, {262144, 1536}};
  for (const auto& nk : shapes) {
    b->Args({nk[0], nk[1], 1, 0});
    b->Args({nk[0], nk[1], 1, 1});
    b->Args({nk[0], nk[1], 8, 0});
  }
  b->ArgNames({"N", "K", "T", "threads"});
}
BENCHMARK(BM_MatMulBf16)
    ->Apply(MatMulShapes)
    ->UseRealTime()
    ->MinTime(0.3)
    ->Unit(benchmark::kMicrosecond);

// The same shapes with W4A16 weights (int4, groups of 32, bf16 scales: compressed-tensors'
// layout) and the LM head as its int8 per-row copy. Bytes processed = packed bytes + scales, the
// bytes a decode step streams. Random q and scales: speed does not depend on the values.
struct QuantWeights {
  int64_t n = 0, k = 0, g = 0;
  QuantKind kind = QuantKind::kNone;
  std::unique_ptr<uint8_t[]> data, scales;
};

TensorView GetQuantWeights(QuantKind kind, int64_t N, int64_t K, int64_t G) {
  static QuantWeights w;
  const size_t ssize = kind == QuantKind::kInt4Group ? 2 : 4;  // bf16 / f32 scales
  const int64_t row_bytes = kind == QuantKind::kInt4Group ? K / 2 : K;
  if (w.n != N || w.k != K || w.g != G || w.kind != kind) {
    w.data.reset();
    w.data.reset(new uint8_t[static_cast<size_t>(N * row_bytes)]);
    w.scales.reset(new uint8_t[static_cast<size_t>(N * (K / G)) * ssize]);
    uint8_t* d = w.data.get();
    uint8_t* s = w.scales.get();
    Pool().ParallelFor(N, 1024, [&](int64_t b, int64_t e) {
      for (int64_t i = b * row_bytes; i < e * row_bytes; ++i) {
        d[i] = static_cast<uint8_t>((static_cast<uint32_t>(i) * 2654435761u) >> 24) | 0x11;
      }
      for (int64_t i = b * (K / G); i < e * (K / G); ++i) {
        if (ssize == 2) {
          const uint16_t v = F32ToBf16(0.01f);
          std::memcpy(s + i * 2, &v, 2);
        } else {
          const float v = 0.01f;
          std::memcpy(s + i * 4, &v, 4);
        }
      }
    });
    w.n = N;
    w.k = K;
    w.g = G;
    w.kind = kind;
  }
  return TensorView(w.data.get(), kind == QuantKind::kInt4Group ? DType::kU8 : DType::kI8, {N, K},
                    QuantInfo{kind, w.scales.get(), ssize == 2 ? DType::kBF16 : DType::kF32, G,
                              row_bytes});
}

// args: N, K, T, threads (1, or 0 for the whole pool), kind (4: int4 g32, 8: int8 per row).
void BM_MatMulQuant(benchmark::State& state) {
  const int64_t N = state.range(0), K = state.range(1), T = state.range(2);
  ThreadPool& pool = PoolFor(state.range(3));
  const bool int4 = state.range(4) == 4;
  const TensorView w = GetQuantWeights(int4 ? QuantKind::kInt4Group : QuantKind::kInt8Group, N, K,
                                       int4 ? 32 : K);
  std::vector<float> x(static_cast<size_t>(T * K));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7) * 0.25f - 0.75f;
  std::vector<float> y(static_cast<size_t>(T * N));
  for (auto _ : state) {
    cpu::MatMul(pool, w, x.data(), T, y.data());
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() *
                          static_cast<int64_t>(w.nbytes() + w.scale_nbytes()));
  state.SetLabel(std::string(cpu::TargetName()) + " threads=" + std::to_string(pool.size()) +
                 (int4 ? " int4g32" : " int8row"));
}

void MatMulQuantShapes(benchmark::internal::Benchmark* b) {
  const int64_t shapes[][2] = {{2048, 1536}, {6144, 1536}, {1536, 6144}, {12288, 1536}};
  for (const auto& nk : shapes) {
    b->Args({nk[0], nk[1], 1, 0, 4});
    b->Args({nk[0], nk[1], 1, 1, 4});
    b->Args({nk[0], nk[1], 64, 0, 4});
  }
  b->Args({262144, 1536, 1, 0, 4});
  b->Args({262144, 1536, 1, 0, 8});
  b->Args({262144, 1536, 1, 1, 8});
  b->ArgNames({"N", "K", "T", "threads", "bits"});
}
BENCHMARK(BM_MatMulQuant)
    ->Apply(MatMulQuantShapes)
    ->UseRealTime()
    ->MinTime(0.3)
    ->Unit(benchmark::kMicrosecond);

// Decode over a working set far larger than the last-level cache, like a model's layers: 128
// distinct int4 [N, K] weights (~0.6-0.7 GB in all) multiplied in turn, so every byte comes from
// DRAM as in a real decode step. args: N, K, threads (1, or 0 for the whole pool).
void BM_MatVecInt4Stream(benchmark::State& state) {
  const int64_t N = state.range(0), K = state.range(1);
  constexpr int kMatrices = 128;
  ThreadPool& pool = PoolFor(state.range(2));
  const int64_t row_bytes = K / 2, groups = K / 32;
  static std::unique_ptr<uint8_t[]> data, scales;
  static int64_t built = 0;
  if (built != N * K) {
    data.reset();
    data.reset(new uint8_t[static_cast<size_t>(kMatrices * N * row_bytes)]);
    scales.reset(new uint8_t[static_cast<size_t>(kMatrices * N * groups * 2)]);
    uint8_t* d = data.get();
    uint16_t* sc = reinterpret_cast<uint16_t*>(scales.get());
    Pool().ParallelFor(kMatrices * N, 256, [&](int64_t b, int64_t e) {
      for (int64_t i = b * row_bytes; i < e * row_bytes; ++i) {
        d[i] = static_cast<uint8_t>((static_cast<uint32_t>(i) * 2654435761u) >> 24);
      }
      for (int64_t i = b * groups; i < e * groups; ++i) sc[i] = F32ToBf16(0.01f);
    });
    built = N * K;
  }
  std::vector<float> x(static_cast<size_t>(K), 0.5f), y(static_cast<size_t>(N));
  int64_t m = 0;
  for (auto _ : state) {
    const TensorView w(data.get() + m * N * row_bytes, DType::kU8, {N, K},
                       QuantInfo{QuantKind::kInt4Group, scales.get() + m * N * groups * 2,
                                 DType::kBF16, 32, row_bytes});
    cpu::MatMul(pool, w, x.data(), 1, y.data());
    benchmark::DoNotOptimize(y.data());
    m = (m + 1) % kMatrices;
  }
  state.SetBytesProcessed(state.iterations() * N * (row_bytes + groups * 2));
  state.SetLabel(std::string(cpu::TargetName()) + " threads=" + std::to_string(pool.size()));
}
BENCHMARK(BM_MatVecInt4Stream)
    ->Args({6144, 1536, 0})
    ->Args({6144, 1536, 1})
    ->Args({1536, 6144, 0})
    ->Args({256, 1536, 0})
    ->ArgNames({"N", "K", "threads"})
    ->UseRealTime()
    ->MinTime(0.5)
    ->Unit(benchmark::kMicrosecond);

// Sum of a 1 GiB buffer as uint64 words, split like the matmul rows: the read bandwidth a
// memory-bound kernel can hope for. Integer sums vectorize without -ffast-math.
// arg: threads, 1 or 0 for the whole pool (the label says how many that is).
void BM_MemoryRead1GiB(benchmark::State& state) {
  constexpr int64_t kWords = (int64_t{1} << 30) / sizeof(uint64_t);
  static std::unique_ptr<uint64_t[]> buf = [] {
    std::unique_ptr<uint64_t[]> b(new uint64_t[kWords]);
    Pool().ParallelFor(kWords, int64_t{1} << 20, [&b](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) b[i] = static_cast<uint64_t>(i);
    });
    return b;
  }();
  const bool all = state.range(0) == 0;
  ThreadPool single(1);
  ThreadPool& pool = all ? Pool() : single;
  std::atomic<uint64_t> total{0};
  for (auto _ : state) {
    pool.ParallelFor(kWords, int64_t{1} << 20, [&](int64_t begin, int64_t end) {
      // Four independent sums keep several loads in flight per thread.
      uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      const uint64_t* p = buf.get();
      int64_t i = begin;
      for (; i + 4 <= end; i += 4) {
        s0 += p[i];
        s1 += p[i + 1];
        s2 += p[i + 2];
        s3 += p[i + 3];
      }
      for (; i < end; ++i) s0 += p[i];
      total.fetch_add(s0 + s1 + s2 + s3, std::memory_order_relaxed);
    });
    benchmark::DoNotOptimize(total.load());
  }
  state.SetBytesProcessed(state.iterations() * kWords * static_cast<int64_t>(sizeof(uint64_t)));
  state.SetLabel("threads=" + std::to_string(pool.size()));
}
BENCHMARK(BM_MemoryRead1GiB)->Arg(1)->Arg(0)->ArgName("threads")->UseRealTime()->MinTime(0.3)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace g4

BENCHMARK_MAIN();
