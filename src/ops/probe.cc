// Machine probes (probe.h): the SIMD loops live in kernels/cpu/probe.cc.
#include "ops/probe.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "kernels/cpu/kernels.h"

namespace g4 {
namespace {

// A device's bandwidth from copies within its memory (each reads and writes `bytes`), timed
// from the first queued copy to a download that waits for the last: median of `passes`.
// 0 when the memory cannot hold the two buffers or a copy fails.
double DeviceCopyBandwidth(Memory& m, size_t bytes, int passes) {
  Buffer<char> a(m), b(m);
  if (!a.Allocate(bytes).ok() || !b.Allocate(bytes).ok()) return 0;
  char sink = 0;
  std::vector<double> rates;
  for (int i = 0; i <= passes; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < 4; ++r) {
      if (!m.Copy(r % 2 ? a.data() : b.data(), r % 2 ? b.data() : a.data(), bytes).ok()) return 0;
    }
    if (!m.Download(&sink, a.data(), 1).ok()) return 0;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (i > 0) rates.push_back(4.0 * 2.0 * static_cast<double>(bytes) / s);  // first: warm-up
  }
  std::sort(rates.begin(), rates.end());
  return rates[rates.size() / 2];
}

}  // namespace

double MeasureReadBandwidth(Backend& backend, size_t bytes, int passes) {
  if (backend.memory().is_device()) {
    return DeviceCopyBandwidth(backend.memory(), bytes, std::max(1, passes));
  }
  return cpu::MeasureReadBandwidth(backend.pool(), bytes, passes);
}

double MeasureFmaPeak(Backend& backend, double seconds) {
  return cpu::MeasureFmaPeak(backend.pool(), seconds);
}

double MeasureFmaPeakOneThread(double seconds) {
  ThreadPool one(1);
  return cpu::MeasureFmaPeak(one, seconds);
}

}  // namespace g4
