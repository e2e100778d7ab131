// Download progress on stderr: "g4: FILE  12.3 MB / 45.6 MB  5.1 MB/s  ETA 7s", at most every
// half second (in place on a terminal, one line each otherwise), and a last line per file.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace g4::hub {

std::string FormatBytes(uint64_t n);  // "512 B", "12.3 kB", "45.6 MB", "1.20 GB" (powers of 1000)
// `rate` in bytes/s (0: unknown), `eta_s` < 0: unknown.
std::string FormatProgress(const std::string& name, uint64_t done, uint64_t total, double rate,
                           double eta_s);

class Progress {
 public:
  // `resumed`: bytes already on disk before this transfer (they count as done, not in the rate).
  Progress(std::string name, uint64_t total, uint64_t resumed, double interval_s = 0.5);
  void Update(uint64_t done);
  void Finish(uint64_t done);

 private:
  using Clock = std::chrono::steady_clock;
  void Print(uint64_t done, bool last);

  std::string name_;
  uint64_t total_, resumed_;
  double interval_s_;
  Clock::time_point start_, last_print_;
  bool tty_;
  bool printed_ = false;
};

}  // namespace g4::hub
