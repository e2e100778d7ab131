// Progress lines on stderr for the steps that can take long: prefill of a long prompt ("g4:
// prefill 1024/4096 tokens, 123 tok/s") and bytes written by make-model. The library only calls
// back (runtime/prefill.h ProgressFn); the throttling and the printing are here. On a terminal
// each report overwrites the last (\r); elsewhere each is its own line.
#pragma once

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdint>
#include <string>

#include "runtime/prefill.h"

namespace g4::cli {

inline constexpr int kDefaultProgressIntervalMs = 2000;

// Registers --progress-interval-ms (at most this long between progress lines; 0: every step).
void AddProgressOption(CLI::App* sub, int* interval_ms);

// Reports at most every `interval_ms`, the first time once that much has passed since
// construction (a prompt that prefills faster prints nothing), and always the last step once
// anything was printed.
class ProgressLine {
 public:
  explicit ProgressLine(int interval_ms);
  // Prints `text` (one step's state) if it is time to; `last`: the step that ends the work.
  void Report(const std::string& text, bool last);
  // Ends a terminal's overwritten line, when one was printed (the caller's summary follows).
  void End();
  // Seconds since construction.
  double Elapsed() const;

 private:
  using Clock = std::chrono::steady_clock;
  Clock::time_point start_, last_;
  std::chrono::milliseconds interval_;
  bool printed_ = false, tty_;
};

// The prefill callback for Generate: "prefill DONE/TOTAL tokens, R tok/s".
ProgressFn PrefillProgress(int interval_ms);

}  // namespace g4::cli
