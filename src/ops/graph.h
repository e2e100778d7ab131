// OpGraph: a recorded sequence of a backend's ops (a CUDA graph under kCuda), replayed as one
// launch. Between Backend::BeginCapture and EndCapture the ops and device-to-device copies the
// calling thread issues are recorded instead of run; Launch replays them with the pointers and
// sizes they were recorded with, reading whatever those buffers hold at launch. So a recorded
// decode step needs fixed buffers whose contents (token ids, positions, KV slots) are refreshed
// before each launch, and kernels that read their per-step choices (the KV slot) from memory.
#pragma once

#include "core/status.h"

namespace g4 {

class OpGraph {
 public:
  virtual ~OpGraph() = default;
  // Queues the recorded ops (asynchronous like any op: a later Download waits for them).
  virtual Status Launch() = 0;
  // Ops recorded (graph nodes): for logs and tests.
  virtual int64_t num_ops() const = 0;
};

}  // namespace g4
