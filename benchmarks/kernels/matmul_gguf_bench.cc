// Benchmarks of g4::cpu::MatMul on GGUF block weights at Gemma 4 E2B shapes, decode (T = 1).
//  * BM_MatVecQ4_0VsInt4: Q4_0 (18 bytes / 32 weights) against the W4A16 int4g32/bf16 kernel (16 +
//    2 bytes / 32 weights: the same 4.5 bits per weight) in one run, interleaved call by call so
//    both see the same machine load, over `matrices` distinct weights of each (1 for an
//    L3-resident weight; 64 for a working set far past the last-level cache, as in a real decode
//    step). Counters: GB/s of each (weight bytes streamed per second) and q4_0 / int4 (speed).
//    With threads = 1 (the caller runs the kernel) also the ratio of thread CPU times,
//    cpu_q4_0/int4, which a machine shared with other jobs does not blur as it does wall time.
//  * BM_MatVecGguf: one kind alone, GB/s; includes the tied LM head [262144, 1536] as Q6_K.
//  * BM_MatMulGguf: T rows of x (a prefill chunk) at E2B's and the 270M's shapes, exact (f32 panels) against
//    q8 (int8 rows of x, integer dot products), GMAC/s; threads = 1 also reports thread CPU time,
//    which a shared machine does not blur.
// Run: g4_kernel_bench --benchmark_filter=Gguf\|Q4_0; G4_BENCH_TARGET as in matmul_bench.cc.

#include <benchmark/benchmark.h>

#include <time.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <iterator>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "core/dtype.h"
#include "core/tensor.h"
#include "core/thread_pool.h"
#include "kernels/cpu/kernels.h"

namespace g4 {
namespace {

ThreadPool& BenchPool(int64_t threads) {
  static ThreadPool all(0), single(1);
  return threads == 1 ? single : all;
}

// Byte offsets of a block's f16 fields (d, dmin / m), set to small finite values.
std::vector<int64_t> HalfOffsets(QuantKind kind) {
  switch (kind) {
    case QuantKind::kQ4_0:
    case QuantKind::kQ5_0:
    case QuantKind::kQ8_0: return {0};
    case QuantKind::kQ6_K: return {208};
    default: return {0, 2};
  }
}

// `count` weights [N, K] of `kind` (GGUF blocks, or int4g32 with bf16 scales) back to back, built
// once per (kind, shape, count) and kept: the benchmark framework reruns a body several times.
struct Buffers {
  std::unique_ptr<uint8_t[]> data, scales;
  int64_t row_bytes = 0;
};

std::map<std::tuple<int, int64_t, int64_t, int64_t>, Buffers>& Cache() {
  static std::map<std::tuple<int, int64_t, int64_t, int64_t>, Buffers> cache;
  return cache;
}

// Frees the buffers of other shapes (call before GetBuffers: peak memory stays one shape's).
void KeepOnlyShape(int64_t N, int64_t K, int64_t count) {
  auto& cache = Cache();
  for (auto it = cache.begin(); it != cache.end();) {
    const auto& [kind, n, k, c] = it->first;
    it = (n == N && k == K && c == count) ? std::next(it) : cache.erase(it);
  }
}

const Buffers& GetBuffers(QuantKind kind, int64_t N, int64_t K, int64_t count) {
  auto& cache = Cache();
  const auto key = std::make_tuple(static_cast<int>(kind), N, K, count);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  Buffers& b = cache[key];  // std::map: references to other entries stay valid
  const bool int4 = kind == QuantKind::kInt4Group;
  const BlockFormat f = GgufBlockFormat(kind);
  b.row_bytes = int4 ? K / 2 : K / f.elems * f.bytes;
  const int64_t rows = count * N, row_bytes = b.row_bytes;
  b.data.reset(new uint8_t[static_cast<size_t>(rows * row_bytes)]);
  if (int4) b.scales.reset(new uint8_t[static_cast<size_t>(rows * (K / 32) * 2)]);
  uint8_t* d = b.data.get();
  uint16_t* s = reinterpret_cast<uint16_t*>(b.scales.get());
  const std::vector<int64_t> halves = int4 ? std::vector<int64_t>{} : HalfOffsets(kind);
  BenchPool(0).ParallelFor(rows, 256, [&](int64_t begin, int64_t end) {  // first touch in parallel
    for (int64_t i = begin * row_bytes; i < end * row_bytes; ++i) {
      d[i] = static_cast<uint8_t>((static_cast<uint32_t>(i) * 2654435761u) >> 24);
    }
    if (int4) {
      for (int64_t i = begin * (K / 32); i < end * (K / 32); ++i) s[i] = F32ToBf16(0.01f);
    } else {
      const uint16_t h = F32ToF16(0.01f);
      for (int64_t r = begin; r < end; ++r) {
        for (int64_t blk = 0; blk < K / f.elems; ++blk) {
          for (int64_t off : halves) std::memcpy(d + r * row_bytes + blk * f.bytes + off, &h, 2);
        }
      }
    }
  });
  return b;
}

TensorView View(QuantKind kind, const Buffers& b, int64_t N, int64_t K, int64_t m) {
  if (kind == QuantKind::kInt4Group) {
    return TensorView(b.data.get() + m * N * b.row_bytes, DType::kU8, {N, K},
                      QuantInfo{kind, b.scales.get() + m * N * (K / 32) * 2, DType::kBF16, 32, b.row_bytes});
  }
  return TensorView(b.data.get() + m * N * b.row_bytes, DType::kU8, {N, K},
                    QuantInfo{kind, nullptr, DType::kF16, GgufBlockFormat(kind).elems, b.row_bytes});
}

// args: N, K, matrices, threads (1, or 0 for the whole pool).
void BM_MatVecQ4_0VsInt4(benchmark::State& state) {
  const int64_t N = state.range(0), K = state.range(1), count = state.range(2);
  ThreadPool& pool = BenchPool(state.range(3));
  KeepOnlyShape(N, K, count);
  const Buffers& q4 = GetBuffers(QuantKind::kQ4_0, N, K, count);
  const Buffers& i4 = GetBuffers(QuantKind::kInt4Group, N, K, count);
  std::vector<float> x(static_cast<size_t>(K)), y(static_cast<size_t>(N));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7) * 0.25f - 0.75f;
  using Clock = std::chrono::steady_clock;
  auto thread_cpu = [] {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  };
  double t_q4 = 0, t_i4 = 0, c_q4 = 0, c_i4 = 0;
  int64_t m = 0;
  for (auto _ : state) {
    const TensorView wq = View(QuantKind::kQ4_0, q4, N, K, m), wi = View(QuantKind::kInt4Group, i4, N, K, m);
    const double c0 = thread_cpu();
    const auto t0 = Clock::now();
    cpu::MatMul(pool, wq, x.data(), 1, y.data());
    benchmark::DoNotOptimize(y.data());
    const double c1 = thread_cpu();
    const auto t1 = Clock::now();
    cpu::MatMul(pool, wi, x.data(), 1, y.data());
    benchmark::DoNotOptimize(y.data());
    const double c2 = thread_cpu();
    const auto t2 = Clock::now();
    c_q4 += c1 - c0;
    c_i4 += c2 - c1;
    t_q4 += std::chrono::duration<double>(t1 - t0).count();
    t_i4 += std::chrono::duration<double>(t2 - t1).count();
    m = (m + 1) % count;
  }
  const double bytes = static_cast<double>(state.iterations()) * N * (K / 32) * 18;  // both kinds
  state.counters["q4_0_GBps"] = bytes / t_q4 * 1e-9;
  state.counters["int4g32_GBps"] = bytes / t_i4 * 1e-9;
  state.counters["q4_0/int4"] = t_i4 / t_q4;
  if (pool.size() == 1 && c_q4 > 0) state.counters["cpu_q4_0/int4"] = c_i4 / c_q4;
  state.SetLabel(std::string(cpu::TargetName()) + " threads=" + std::to_string(pool.size()));
}
BENCHMARK(BM_MatVecQ4_0VsInt4)
    ->Args({6144, 1536, 1, 0})
    ->Args({1536, 6144, 1, 0})
    ->Args({6144, 1536, 1, 1})
    ->Args({1536, 6144, 1, 1})
    ->Args({6144, 1536, 64, 1})
    ->Args({6144, 1536, 64, 0})
    ->Args({1536, 6144, 64, 0})
    ->ArgNames({"N", "K", "matrices", "threads"})
    ->UseRealTime()
    ->MinTime(0.5)
    ->Unit(benchmark::kMicrosecond);

// args: N, K, kind (QuantKind as int), threads, matvec (0: exact MatMul, 1: MatMulQ8a's int8
// activations).
void BM_MatVecGguf(benchmark::State& state) {
  const int64_t N = state.range(0), K = state.range(1);
  const QuantKind kind = static_cast<QuantKind>(state.range(2));
  ThreadPool& pool = BenchPool(state.range(3));
  KeepOnlyShape(N, K, 1);
  const Buffers& b = GetBuffers(kind, N, K, 1);
  const TensorView w = View(kind, b, N, K, 0);
  std::vector<float> x(static_cast<size_t>(K)), y(static_cast<size_t>(N));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7) * 0.25f - 0.75f;
  const bool q8 = state.range(4) != 0;
  for (auto _ : state) {
    (q8 ? cpu::MatMulQ8a : cpu::MatMul)(pool, w, x.data(), 1, y.data());
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(w.nbytes()));
  state.SetLabel(std::string(cpu::TargetName()) + " threads=" + std::to_string(pool.size()) + " " +
                 QuantKindName(kind) + (q8 ? std::string(" q8:") + cpu::MatMulQ8aKernel() : " exact"));
}

void GgufShapes(benchmark::internal::Benchmark* b) {
  for (QuantKind k : {QuantKind::kQ4_0, QuantKind::kQ8_0, QuantKind::kQ4_K, QuantKind::kQ6_K,
                      QuantKind::kQ5_K, QuantKind::kQ4_1}) {
    b->Args({6144, 1536, static_cast<int64_t>(k), 0, 0});
  }
  // The kinds MatMulQ8a runs, both ways: E2B's MLP and head widths, Gemma 3 270M's head [262144, 640] and its
  // Q5_0 MLP gate / up [2048, 640].
  for (int q8 : {0, 1}) {
    for (QuantKind k : {QuantKind::kQ8_0, QuantKind::kQ4_0, QuantKind::kQ5_0, QuantKind::kQ4_K,
                        QuantKind::kQ6_K}) {
      b->Args({6144, 1536, static_cast<int64_t>(k), 0, q8});
      b->Args({262144, 1536, static_cast<int64_t>(k), 0, q8});
    }
    b->Args({262144, 640, static_cast<int64_t>(QuantKind::kQ8_0), 0, q8});
    for (int threads : {1, 0}) {  // 270M's gate / up: small enough for one thread's share to matter
      b->Args({2048, 640, static_cast<int64_t>(QuantKind::kQ5_0), threads, q8});
      b->Args({2048, 640, static_cast<int64_t>(QuantKind::kQ8_0), threads, q8});
    }
  }
  b->ArgNames({"N", "K", "kind", "threads", "q8"});
}
BENCHMARK(BM_MatVecGguf)->Apply(GgufShapes)->UseRealTime()->MinTime(0.3)->Unit(benchmark::kMicrosecond);

// Decode as a forward pass streams it: `count` distinct weights [N, K] in turn (64 of E2B's
// [6144, 1536] Q4_0 are 340 MB, far past the caches), through MatMulQ8a on the rows as stored
// (packed 0) or on the panels packed at load (packed 1, kernels/cpu/matmul_q8a_packed.h); GB/s
// of the stored weights. One [262144, 1536] matrix is a single long stream per thread: what
// the kernel streams when calls do not start and end every few MB.
// args: N, K, kind, count, packed, threads (1, or 0 for the whole pool).
void BM_MatVecQ8aPacked(benchmark::State& state) {
  const int64_t N = state.range(0), K = state.range(1), count = state.range(3);
  const QuantKind kind = static_cast<QuantKind>(state.range(2));
  ThreadPool& pool = BenchPool(state.range(5));
  KeepOnlyShape(N, K, count);
  const Buffers& b = GetBuffers(kind, N, K, count);
  std::vector<TensorView> views;
  std::vector<PackedWeight> panels;
  for (int64_t m = 0; m < count; ++m) {
    views.push_back(View(kind, b, N, K, m));
    if (state.range(4) == 0) continue;
    panels.push_back(cpu::PackQ8aWeight(pool, views.back()));
    if (!panels.back().panels) return state.SkipWithError("no packed panels on this CPU");
    SetPanels(panels.back(), &views.back());
  }
  std::vector<float> x(static_cast<size_t>(K)), y(static_cast<size_t>(N));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7) * 0.25f - 0.75f;
  int64_t m = 0;
  for (auto _ : state) {
    cpu::MatMulQ8a(pool, views[static_cast<size_t>(m)], x.data(), 1, y.data());
    benchmark::DoNotOptimize(y.data());
    m = (m + 1) % count;
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(views[0].nbytes()));
  state.SetLabel(std::string("threads=") + std::to_string(pool.size()) + " " + QuantKindName(kind) +
                 (state.range(4) ? " packed" : " rows") + " q8:" + cpu::MatMulQ8aKernel());
}
BENCHMARK(BM_MatVecQ8aPacked)
    ->ArgsProduct({{6144}, {1536}, {static_cast<int64_t>(QuantKind::kQ4_0)}, {64}, {0, 1}, {0, 1}})
    ->ArgsProduct({{1536}, {6144}, {static_cast<int64_t>(QuantKind::kQ4_0)}, {64}, {0, 1}, {0}})
    ->ArgsProduct({{2048}, {640}, {static_cast<int64_t>(QuantKind::kQ5_0)}, {256}, {0, 1}, {0, 1}})
    ->ArgsProduct({{262144}, {640}, {static_cast<int64_t>(QuantKind::kQ8_0)}, {1}, {0, 1}, {0}})
    // E2B's head as a GGUF file stores it (Q6_K) and as the Q8_0 copy made where it is not packed.
    ->ArgsProduct({{262144}, {1536}, {static_cast<int64_t>(QuantKind::kQ6_K),
                                      static_cast<int64_t>(QuantKind::kQ8_0)}, {1}, {0, 1}, {0}})
    ->ArgsProduct({{262144}, {1536}, {static_cast<int64_t>(QuantKind::kQ4_0)}, {1}, {0, 1}, {0, 1}})
    ->ArgNames({"N", "K", "kind", "count", "packed", "threads"})
    ->UseRealTime()
    ->MinTime(0.5)
    ->Unit(benchmark::kMicrosecond);

// args: N, K, kind, T, threads, q8 (0: exact; 1: int8 activations, weights as stored; 2: the
// same on panels packed at load, as g4 --matvec q8 loads them).
void BM_MatMulGguf(benchmark::State& state) {
  const int64_t N = state.range(0), K = state.range(1), T = state.range(3);
  const QuantKind kind = static_cast<QuantKind>(state.range(2));
  ThreadPool& pool = BenchPool(state.range(4));
  KeepOnlyShape(N, K, 1);
  TensorView w = View(kind, GetBuffers(kind, N, K, 1), N, K, 0);
  std::vector<float> x(static_cast<size_t>(T * K)), y(static_cast<size_t>(T * N));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7) * 0.25f - 0.75f;
  const bool q8 = state.range(5) != 0;
  PackedWeight panels;
  if (state.range(5) == 2) {
    panels = cpu::PackQ8aWeight(pool, w);
    if (!panels.panels) return state.SkipWithError("no packed panels on this CPU");
    SetPanels(panels, &w);
  }
  for (auto _ : state) {
    (q8 ? cpu::MatMulQ8a : cpu::MatMul)(pool, w, x.data(), T, y.data());
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.counters["GMAC/s"] = benchmark::Counter(static_cast<double>(state.iterations()) * N * K * T * 1e-9,
                                                benchmark::Counter::kIsRate);
  state.SetLabel(std::string(cpu::TargetName()) + " threads=" + std::to_string(pool.size()) + " " +
                 QuantKindName(kind) + (q8 ? std::string(" q8:") + cpu::MatMulQ8aKernel() : " exact") +
                 (panels.panels ? " packed" : ""));
}
BENCHMARK(BM_MatMulGguf)
    ->ArgsProduct({{6144}, {1536}, {static_cast<int64_t>(QuantKind::kQ4_0)}, {8, 64, 512}, {1, 0}, {0, 1, 2}})
    ->Args({1536, 6144, static_cast<int64_t>(QuantKind::kQ4_0), 512, 0, 1})
    ->Args({1536, 6144, static_cast<int64_t>(QuantKind::kQ4_0), 512, 0, 0})
    ->Args({2048, 640, static_cast<int64_t>(QuantKind::kQ5_0), 512, 0, 1})
    ->Args({2048, 640, static_cast<int64_t>(QuantKind::kQ5_0), 512, 0, 2})
    ->Args({2048, 640, static_cast<int64_t>(QuantKind::kQ5_0), 512, 0, 0})
    ->Args({640, 2048, static_cast<int64_t>(QuantKind::kQ6_K), 512, 1, 1})  // 270M's down
    ->Args({640, 2048, static_cast<int64_t>(QuantKind::kQ6_K), 512, 1, 0})
    ->Args({640, 2048, static_cast<int64_t>(QuantKind::kQ6_K), 512, 1, 2})
    ->Args({640, 1024, static_cast<int64_t>(QuantKind::kQ4_K), 512, 1, 1})  // 270M's o
    ->Args({640, 1024, static_cast<int64_t>(QuantKind::kQ4_K), 512, 1, 0})
    ->ArgNames({"N", "K", "kind", "T", "threads", "q8"})
    ->UseRealTime()
    ->MinTime(0.3)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace g4
