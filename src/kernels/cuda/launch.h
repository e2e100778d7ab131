// The process-wide switch for programmatic dependent launch (launch.cuh): DeviceContext::Open
// sets it from the device policy (pdl). Off until then, so the device-pointer kernels run on
// their own (their tests) launch as <<<>>> does. Host-only, so plain C++ units can include it.
#pragma once

#include <atomic>

namespace g4::cuda {

inline std::atomic<bool>& ProgrammaticLaunches() {
  static std::atomic<bool> on{false};
  return on;
}

}  // namespace g4::cuda
