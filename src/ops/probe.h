// Machine probes for benchmarks, on a Backend's thread pool and SIMD target: what decode speed
// is bounded by (memory-read bandwidth) and what prefill speed is bounded by (f32 FMA peak).
#pragma once

#include <cstddef>

#include "ops/backend.h"

namespace g4 {

// Median of `passes` streaming reads of a fresh `bytes` buffer (choose it larger than the last
// level cache), in bytes/s. The ref backend measures with its one thread. A backend whose
// memory is a device's (kCuda) measures that memory instead: copies within it, read + write
// bytes per second, the figure decode on the device is bound by.
double MeasureReadBandwidth(Backend& backend, size_t bytes = size_t{1} << 30, int passes = 5);

// f32 FMA throughput in flop/s (2 per lane per FMA) with every thread of the backend busy, best
// of 3 runs of about `seconds`.
double MeasureFmaPeak(Backend& backend, double seconds = 0.2);
// The same on one thread: on a machine shared with other processes, threads x this is the
// better estimate of what the cores can do when they are free.
double MeasureFmaPeakOneThread(double seconds = 0.2);

}  // namespace g4
