// Machine probes for `g4 bench`, Highway SIMD with runtime dispatch (the same target the kernels
// use): the memory-read bandwidth a memory-bound kernel can hope for (streaming sums over a buffer
// larger than every cache, split across the pool like the matvec rows) and the f32 FMA peak
// (independent register-only FMA chains on every thread). Decode speed is judged against the
// first (roofline = bandwidth / bytes per token), prefill against the second.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include "kernels/cpu/kernels.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/probe.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace g4::cpu {
namespace HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;

// Sum of words [begin, end) of p, 4 vectors per step so several loads are in flight.
uint32_t SumWords(const uint32_t* HWY_RESTRICT p, int64_t begin, int64_t end) {
  const hn::ScalableTag<uint32_t> d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  auto a0 = hn::Zero(d), a1 = a0, a2 = a0, a3 = a0;
  int64_t i = begin;
  for (; i + 4 * L <= end; i += 4 * L) {
    a0 = hn::Add(a0, hn::LoadU(d, p + i));
    a1 = hn::Add(a1, hn::LoadU(d, p + i + L));
    a2 = hn::Add(a2, hn::LoadU(d, p + i + 2 * L));
    a3 = hn::Add(a3, hn::LoadU(d, p + i + 3 * L));
  }
  uint32_t s = hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3))));
  for (; i < end; ++i) s += p[i];
  return s;
}

// FMAs per thread: 12 independent accumulators (enough to cover 4-cycle FMA latency on two
// ports) for `iters` steps.
float FmaLoop(int64_t iters, float seed) {
  const hn::ScalableTag<float> d;
  const auto m = hn::Set(d, 0.999999f), c = hn::Set(d, 1e-7f);
  // Distinct starting values: identical chains would be merged into one by the compiler.
  auto a0 = hn::Set(d, seed), a1 = hn::Set(d, seed + 0.1f), a2 = hn::Set(d, seed + 0.2f),
       a3 = hn::Set(d, seed + 0.3f), a4 = hn::Set(d, seed + 0.4f), a5 = hn::Set(d, seed + 0.5f),
       a6 = hn::Set(d, seed + 0.6f), a7 = hn::Set(d, seed + 0.7f), a8 = hn::Set(d, seed + 0.8f),
       a9 = hn::Set(d, seed + 0.9f), a10 = hn::Set(d, seed + 1.0f), a11 = hn::Set(d, seed + 1.1f);
  for (int64_t i = 0; i < iters; ++i) {
    a0 = hn::MulAdd(a0, m, c); a1 = hn::MulAdd(a1, m, c); a2 = hn::MulAdd(a2, m, c);
    a3 = hn::MulAdd(a3, m, c); a4 = hn::MulAdd(a4, m, c); a5 = hn::MulAdd(a5, m, c);
    a6 = hn::MulAdd(a6, m, c); a7 = hn::MulAdd(a7, m, c); a8 = hn::MulAdd(a8, m, c);
    a9 = hn::MulAdd(a9, m, c); a10 = hn::MulAdd(a10, m, c); a11 = hn::MulAdd(a11, m, c);
  }
  const auto s = hn::Add(hn::Add(hn::Add(a0, a1), hn::Add(a2, a3)),
                         hn::Add(hn::Add(hn::Add(a4, a5), hn::Add(a6, a7)),
                                 hn::Add(hn::Add(a8, a9), hn::Add(a10, a11))));
  return hn::GetLane(hn::SumOfLanes(d, s));
}

}  // namespace

double ReadBandwidthImpl(ThreadPool& pool, const void* buf, size_t bytes) {
  const auto* p = static_cast<const uint32_t*>(buf);
  const int64_t words = static_cast<int64_t>(bytes / 4);
  std::atomic<uint32_t> sink{0};
  const auto t0 = std::chrono::steady_clock::now();
  pool.ParallelFor(words, int64_t{1} << 16, [&](int64_t b, int64_t e) {
    sink.fetch_add(SumWords(p, b, e), std::memory_order_relaxed);
  });
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  static std::atomic<uint32_t> keep{0};  // so the sums cannot be optimised away
  keep.fetch_add(sink.load());
  return s > 0 ? static_cast<double>(words) * 4 / s : 0.0;
}

double FmaPeakImpl(ThreadPool& pool, int64_t iters) {
  const int threads = pool.size();
  std::atomic<int64_t> keep{0};
  const auto t0 = std::chrono::steady_clock::now();
  pool.ParallelFor(threads, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      keep.fetch_add(static_cast<int64_t>(FmaLoop(iters, 1.0f + static_cast<float>(i))));
    }
  });
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double lanes = static_cast<double>(hn::Lanes(hn::ScalableTag<float>()));
  return s > 0 ? 2.0 * 12 * lanes * static_cast<double>(iters) * threads / s : 0.0;
}

}  // namespace HWY_NAMESPACE
}  // namespace g4::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace g4::cpu {

HWY_EXPORT(ReadBandwidthImpl);
HWY_EXPORT(FmaPeakImpl);

double MeasureReadBandwidth(ThreadPool& pool, size_t bytes, int passes) {
  bytes = std::max<size_t>(bytes / 64 * 64, 64);
  std::unique_ptr<uint32_t[]> buf(new (std::nothrow) uint32_t[bytes / 4]);
  if (!buf) return 0.0;
  // First touch on the pool's threads, with non-zero data (zero pages could be shared).
  pool.ParallelFor(static_cast<int64_t>(bytes / 4), int64_t{1} << 16, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) buf[i] = static_cast<uint32_t>(i * 2654435761u);
  });
  std::vector<double> rates;
  for (int i = 0; i < std::max(1, passes); ++i) {
    rates.push_back(HWY_DYNAMIC_DISPATCH(ReadBandwidthImpl)(pool, buf.get(), bytes));
  }
  std::sort(rates.begin(), rates.end());
  return rates[rates.size() / 2];
}

double MeasureFmaPeak(ThreadPool& pool, double seconds) {
  // Calibrate the step count on a short run, then time ~`seconds` of FMAs; best of 3 (other
  // processes competing for the cores only ever make a run slower).
  const double probe = HWY_DYNAMIC_DISPATCH(FmaPeakImpl)(pool, 1 << 16);
  const double flops_per_iter = 2.0 * 12 * 16 * pool.size();  // upper bound of one step
  const int64_t iters = std::max<int64_t>(
      1 << 16, static_cast<int64_t>(seconds * std::max(probe, 1e9) / flops_per_iter));
  double best = probe;
  for (int i = 0; i < 3; ++i) best = std::max(best, HWY_DYNAMIC_DISPATCH(FmaPeakImpl)(pool, iters));
  return best;
}

}  // namespace g4::cpu
#endif  // HWY_ONCE
