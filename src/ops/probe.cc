// Machine probes (probe.h): the SIMD loops live in kernels/cpu/probe.cc.
#include "ops/probe.h"

#include "kernels/cpu/kernels.h"

namespace g4 {

double MeasureReadBandwidth(Backend& backend, size_t bytes, int passes) {
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
