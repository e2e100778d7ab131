// Benchmarks of g4::cpu::Attention at Gemma 4 E2B shapes (8 query heads on one KV head; head
// dim 256 on sliding layers, 512 on global ones). Decode: one token over P cached positions
// (in an array of P or 1.5 P slots), K/V stored as f32, bf16 or q8, reported as bytes of K/V
// read per second. Each run attends over the next of several caches totalling >= 256 MiB, so
// the K/V come from DRAM as they do in the model (where a layer's cache was last touched a
// whole step ago). A decode step is bound by these bytes when the GB/s approach the machine's
// read bandwidth (g4_kernel_bench's BM_ReadBandwidth).
// Prefill: a chunk of 512 tokens at the end of S positions, in tokens and GFLOP/s.
// Run: g4_kernel_bench --benchmark_filter=Attention; all threads of the machine are used.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/q8_blocks.h"
#include "core/thread_pool.h"
#include "kernels/cpu/kernels.h"
#include "ops/kv_write.h"

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

// One cache's K and V (n values each, value i: kv(i) and -kv(i)) stored as a KvDtype.
struct StoredKv {
  StoredKv(KvDtype dtype, int64_t n, int64_t salt) {
    std::vector<float> k(static_cast<size_t>(n)), v(k.size());
    for (int64_t i = 0; i < n; ++i) {
      k[static_cast<size_t>(i)] = static_cast<float>((i * 37 + salt) % 101) / 101.0f - 0.5f;
      v[static_cast<size_t>(i)] = -k[static_cast<size_t>(i)];
    }
    switch (dtype) {
      case KvDtype::kBF16:
        for (int64_t i = 0; i < n; ++i) {
          k16.push_back(F32ToBf16(k[static_cast<size_t>(i)]));
          v16.push_back(F32ToBf16(v[static_cast<size_t>(i)]));
        }
        break;
      case KvDtype::kQ8:
        k8.resize(k.size());
        v8.resize(k.size());
        ks.resize(k.size() / kQ8Block);
        vs.resize(ks.size());
        QuantizeQ8Blocks(k.data(), n, k8.data(), ks.data(), nullptr);
        QuantizeQ8Blocks(v.data(), n, v8.data(), vs.data(), nullptr);
        break;
      default:
        k32 = std::move(k);
        v32 = std::move(v);
    }
  }
  // Points a at these K/V.
  void Point(AttentionArgs* a) const {
    a->k = k32.empty() ? nullptr : k32.data();
    a->v = v32.empty() ? nullptr : v32.data();
    a->k16 = k16.empty() ? nullptr : k16.data();
    a->v16 = v16.empty() ? nullptr : v16.data();
    a->k8 = k8.empty() ? nullptr : k8.data();
    a->v8 = v8.empty() ? nullptr : v8.data();
    a->k_scale8 = ks.empty() ? nullptr : ks.data();
    a->v_scale8 = vs.empty() ? nullptr : vs.data();
  }

  std::vector<float> k32, v32, ks, vs;
  std::vector<uint16_t> k16, v16;
  std::vector<int8_t> k8, v8;
};

// The benchmarks' K/V dtype argument: 0 f32, 1 bf16, 2 q8.
KvDtype DtypeArg(int64_t arg) {
  return arg == 1 ? KvDtype::kBF16 : arg == 2 ? KvDtype::kQ8 : KvDtype::kF32;
}

// args: head dim, cached positions P, K/V dtype (0 f32, 1 bf16, 2 q8), slots S in percent of
// P (150: the array of a full layer after a prefill of P and one decode step, which grew it by
// half; the slots past P are empty), paged (1: K/V read through a block table of 256-slot
// blocks stored in reverse order, ops/kv_blocks.h; 0: in slot order).
void BM_AttentionDecode(benchmark::State& state) {
  static ThreadPool pool(0);
  const int64_t D = state.range(0), P = state.range(1), S = P * state.range(3) / 100;
  const KvDtype dtype = DtypeArg(state.range(2));
  const int64_t n = S * kKvHeads * D;
  const size_t bytes = 2 * KvRowBytes(dtype, P * kKvHeads * D);  // read: the filled slots
  const size_t copies = std::max<size_t>(2, (size_t{256} << 20) / bytes);
  std::vector<StoredKv> caches;
  for (size_t c = 0; c < copies; ++c) caches.emplace_back(dtype, n, static_cast<int64_t>(c));
  std::vector<float> q(static_cast<size_t>(kHeads * D), 0.03f), out(q.size());
  std::vector<int32_t> k_pos(static_cast<size_t>(S), -1);
  for (int64_t s = 0; s < P; ++s) k_pos[static_cast<size_t>(s)] = static_cast<int32_t>(s);
  const int32_t q_pos = static_cast<int32_t>(P - 1);
  AttentionArgs a = E2bArgs(q.data(), &q_pos, k_pos.data(), 1, S, D, out.data());
  constexpr int32_t kBlock = 256;
  std::vector<int32_t> table(static_cast<size_t>(S / kBlock));
  for (size_t b = 0; b < table.size(); ++b) table[b] = static_cast<int32_t>(table.size() - 1 - b);
  if (state.range(4) != 0) {
    a.block_table = table.data();
    a.block_size = kBlock;
  }
  size_t c = 0;
  for (auto _ : state) {
    caches[c].Point(&a);
    cpu::Attention(pool, a);
    benchmark::DoNotOptimize(out.data());
    c = (c + 1) % copies;
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
  state.SetLabel(std::string(KvDtypeName(dtype)) + " D=" + std::to_string(D) +
                 " P=" + std::to_string(P) + " S=" + std::to_string(S) +
                 (a.block_table != nullptr ? " paged" : ""));
}
BENCHMARK(BM_AttentionDecode)
    ->ArgsProduct({{256, 512}, {512, 2048}, {0, 1, 2}, {100}, {0}})
    ->Args({512, 2048, 0, 150, 0})
    ->Args({512, 2048, 2, 150, 0})
    ->ArgsProduct({{256, 512}, {2048}, {0, 2}, {100}, {1}})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

// A prefill chunk of T queries (the last T of S positions, causal) on a global layer's shape
// (head dim 512), K/V f32, bf16 or q8; counters: query tokens per second and GFLOP/s (2 * 2 * D
// flops per visible key and head). args: S, T, K/V dtype (0 f32, 1 bf16, 2 q8).
void BM_AttentionPrefill(benchmark::State& state) {
  static ThreadPool pool(0);
  const int64_t D = 512, S = state.range(0), T = state.range(1);
  const KvDtype dtype = DtypeArg(state.range(2));
  const StoredKv kv(dtype, S * kKvHeads * D, 0);
  std::vector<float> q(static_cast<size_t>(T * kHeads * D), 0.03f), out(q.size());
  std::vector<int32_t> k_pos(static_cast<size_t>(S)), q_pos(static_cast<size_t>(T));
  for (int64_t s = 0; s < S; ++s) k_pos[static_cast<size_t>(s)] = static_cast<int32_t>(s);
  for (int64_t t = 0; t < T; ++t) q_pos[static_cast<size_t>(t)] = static_cast<int32_t>(S - T + t);
  AttentionArgs a = E2bArgs(q.data(), q_pos.data(), k_pos.data(), T, S, D, out.data());
  kv.Point(&a);
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
  state.SetLabel(std::string(KvDtypeName(dtype)) + " S=" + std::to_string(S) +
                 " T=" + std::to_string(T));
}
BENCHMARK(BM_AttentionPrefill)
    ->ArgsProduct({{2048, 8192}, {512}, {0, 1, 2}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace g4
