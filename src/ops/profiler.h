// OpProfiler: where the time of a forward pass goes, by op category, measured at the op
// interface (Backend times every call while a profiler is attached and enabled). Categories split
// the matvecs by weight storage (the question decode speed turns on) and recognise the LM head as
// the matmul whose N is the vocabulary. Each call is timed whole (including the thread pool's
// wake-up and join), with steady_clock: ~50 ns per op, ~500 ops per E2B token, so < 0.1%.
// Not thread-safe: one Backend, one caller thread, as the Backend itself.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <string>

#include "core/tensor.h"

namespace g4 {

class OpProfiler {
 public:
  enum Category {
    kMatVecF32,
    kMatVecBf16,
    kMatVecF16,
    kMatVecInt4,
    kMatVecInt8,
    kMatVecGguf,  // GGUF block weights (q4_0, q6_k, ...), whatever the kind
    kLmHead,
    kAttention,
    kNorm,
    kRope,
    kElementwise,  // gelu*up, residual add, scale, softcap
    kEmbed,
    kMoe,  // a mixture-of-experts block: routing and the chosen experts' matmuls
    kNumCategories
  };
  using Clock = std::chrono::steady_clock;

  // "matvec bf16", "matvec int4", "lm head", "attention", ...
  static const char* CategoryName(Category c);

  // Matmuls with w.dim(0) == rows are the LM head (set it to the vocabulary size).
  void set_lm_head_rows(int64_t rows) { lm_head_rows_ = rows; }
  // Only enabled profilers record (e.g. decode steps but not prefill).
  void set_enabled(bool enabled) { enabled_ = enabled; }
  bool enabled() const { return enabled_; }

  Category MatMulCategory(const TensorView& w);
  void Record(Category c, Clock::time_point start) {
    seconds_[c] += std::chrono::duration<double>(Clock::now() - start).count();
    ++calls_[c];
  }
  // The next n recorded calls are one op (a GroupedMatMul timed weight by weight).
  void MergeNextCalls(int n) { merged_calls_ += n - 1; }
  void Reset();

  double seconds(Category c) const { return seconds_[c]; }
  int64_t calls(Category c) const { return calls_[c]; }
  // Op-interface calls: what a device launches (one kernel each, give or take a split attention
  // or a host fallback) and records per decode step.
  int64_t ops() const;
  double total_seconds() const;
  // Storage of the LM head seen by the last profiled head call ("int8row/f32", "bf16"), or "".
  const std::string& lm_head_storage() const { return lm_head_storage_; }

 private:
  std::array<double, kNumCategories> seconds_{};
  std::array<int64_t, kNumCategories> calls_{};
  int64_t merged_calls_ = 0;
  int64_t lm_head_rows_ = -1;
  bool enabled_ = true;
  std::string lm_head_storage_;
};

}  // namespace g4
