// Benchmarks of g4::cpu::Attention at Gemma 4 E2B shapes (8 query heads on one KV head; head
// dim 256 on sliding layers, 512 on global ones). Decode: one token over S cached positions,
// K/V stored as f32 or bf16, reported as bytes of K/V read per second. Each run attends over
// the next of several caches totalling >= 256 MiB, so the K/V come from DRAM as they do in the
// model (where a layer's cache was last touched a whole step ago). A decode step is bound by
// these bytes when the GB/s approach the machine's read bandwidth (g4_kernel_bench's BM_ReadBandwidth).
// Prefill: a chunk of 512 tokens at the end of S positions, in tokens and GFLOP/s.
// Run: g4_kernel_bench --benchmark_filter=Attention; all threads of the machine are used.

#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "core/dtype.h"
#include "core/thread_pool.h"
#include "kernels/cpu/kernels.h"

namespace g4 {
namespace {

constexpr int64_t kHeads = 8, kKvHeads = 1;

// Arguments for T queries over S slots at the E2B head counts (K/V pointers left to the caller).
AttentionArgs E2bArgs(const float* q, const int32_t* q_pos, const int32_t* k_pos, int64_t T,
                      int64_t S, int64_t D, float* out) {
  AttentionArgs a;
  a.q = q;
  a.q_pos = q_pos;
  a.k_pos = k_pos;
  a.T = T;
  a.S = S;
  a.n_heads = kHeads;
  a.n_kv_heads = kKvHeads;
  a.head_dim = D;
  a.scale = 1.0f;
  a.out = out;
  return a;
}

// args: head dim, cached positions S, bf16 (0/1).
void BM_AttentionDecode(benchmark::State& state) {
  static ThreadPool pool(0);
  const int64_t D = state.range(0), S = state.range(1);
  const bool bf16 = state.range(2) != 0;
  const int64_t n = S * kKvHeads * D;
  const size_t bytes = static_cast<size_t>(2 * n) * (bf16 ? 2 : 4);
  const size_t copies = std::max<size_t>(2, (size_t{256} << 20) / bytes);
  std::vector<std::vector<float>> k32(bf16 ? 0 : copies), v32(k32.size());
  std::vector<std::vector<uint16_t>> k16(bf16 ? copies : 0), v16(k16.size());
  for (size_t c = 0; c < copies; ++c) {
    for (int64_t i = 0; i < n; ++i) {
      const float kv = static_cast<float>((i * 37 + c) % 101) / 101.0f - 0.5f;
      if (bf16) {
        k16[c].push_back(F32ToBf16(kv));
        v16[c].push_back(F32ToBf16(-kv));
      } else {
        k32[c].push_back(kv);
        v32[c].push_back(-kv);
      }
    }
  }
  std::vector<float> q(static_cast<size_t>(kHeads * D), 0.03f), out(q.size());
  std::vector<int32_t> k_pos(static_cast<size_t>(S));
  for (int64_t s = 0; s < S; ++s) k_pos[static_cast<size_t>(s)] = static_cast<int32_t>(s);
  const int32_t q_pos = static_cast<int32_t>(S - 1);
  AttentionArgs a = E2bArgs(q.data(), &q_pos, k_pos.data(), 1, S, D, out.data());
  size_t c = 0;
  for (auto _ : state) {
    if (bf16) {
      a.k16 = k16[c].data();
      a.v16 = v16[c].data();
    } else {
      a.k = k32[c].data();
      a.v = v32[c].data();
    }
    cpu::Attention(pool, a);
    benchmark::DoNotOptimize(out.data());
    c = (c + 1) % copies;
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
  state.SetLabel(std::string(bf16 ? "bf16" : "f32") + " D=" + std::to_string(D) +
                 " S=" + std::to_string(S));
}
BENCHMARK(BM_AttentionDecode)
    ->ArgsProduct({{256, 512}, {512, 2048}, {0, 1}})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

// A prefill chunk of T queries (the last T of S positions, causal) on a global layer's shape
// (head dim 512), K/V f32 or bf16; counters: query tokens per second and GFLOP/s (2 * 2 * D
// flops per visible key and head). args: S, T, bf16 (0/1).
void BM_AttentionPrefill(benchmark::State& state) {
  static ThreadPool pool(0);
  const int64_t D = 512, S = state.range(0), T = state.range(1);
  const bool bf16 = state.range(2) != 0;
  const int64_t n = S * kKvHeads * D;
  std::vector<float> k32(bf16 ? 0 : static_cast<size_t>(n)), v32(k32.size());
  std::vector<uint16_t> k16(bf16 ? static_cast<size_t>(n) : 0), v16(k16.size());
  for (int64_t i = 0; i < n; ++i) {
    const float kv = static_cast<float>((i * 37) % 101) / 101.0f - 0.5f;
    if (bf16) {
      k16[static_cast<size_t>(i)] = F32ToBf16(kv);
      v16[static_cast<size_t>(i)] = F32ToBf16(-kv);
    } else {
      k32[static_cast<size_t>(i)] = kv;
      v32[static_cast<size_t>(i)] = -kv;
    }
  }
  std::vector<float> q(static_cast<size_t>(T * kHeads * D), 0.03f), out(q.size());
  std::vector<int32_t> k_pos(static_cast<size_t>(S)), q_pos(static_cast<size_t>(T));
  for (int64_t s = 0; s < S; ++s) k_pos[static_cast<size_t>(s)] = static_cast<int32_t>(s);
  for (int64_t t = 0; t < T; ++t) q_pos[static_cast<size_t>(t)] = static_cast<int32_t>(S - T + t);
  AttentionArgs a = E2bArgs(q.data(), q_pos.data(), k_pos.data(), T, S, D, out.data());
  a.k = bf16 ? nullptr : k32.data();
  a.v = bf16 ? nullptr : v32.data();
  a.k16 = bf16 ? k16.data() : nullptr;
  a.v16 = bf16 ? v16.data() : nullptr;
  for (auto _ : state) {
    cpu::Attention(pool, a);
    benchmark::DoNotOptimize(out.data());
  }
  const double keys = static_cast<double>(T) * static_cast<double>(S - T) +
                      static_cast<double>(T) * static_cast<double>(T + 1) / 2;
  const double iters = static_cast<double>(state.iterations());
  state.counters["tok/s"] = benchmark::Counter(iters * static_cast<double>(T),
                                               benchmark::Counter::kIsRate);
  state.counters["GFLOP/s"] = benchmark::Counter(iters * keys * kHeads * 4 * D * 1e-9,
                                                 benchmark::Counter::kIsRate);
  state.SetLabel(std::string(bf16 ? "bf16" : "f32") + " S=" + std::to_string(S) +
                 " T=" + std::to_string(T));
}
BENCHMARK(BM_AttentionPrefill)
    ->ArgsProduct({{2048, 8192}, {512}, {0, 1}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace g4
