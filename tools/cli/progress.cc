#include "progress.h"

#include <unistd.h>

#include <cstdio>
#include <memory>

namespace g4::cli {

void AddProgressOption(CLI::App* sub, int* interval_ms) {
  sub->add_option("--progress-interval-ms", *interval_ms,
                  "Most milliseconds between progress lines on stderr for a long step (0: every "
                  "step)")
      ->check(CLI::NonNegativeNumber);
}

ProgressLine::ProgressLine(int interval_ms)
    : start_(Clock::now()), last_(start_), interval_(interval_ms), tty_(isatty(STDERR_FILENO)) {}

double ProgressLine::Elapsed() const {
  return std::chrono::duration<double>(Clock::now() - start_).count();
}

void ProgressLine::Report(const std::string& text, bool last) {
  const Clock::time_point now = Clock::now();
  if (!(last && printed_) && now - last_ < interval_) return;
  last_ = now;
  printed_ = true;
  std::fprintf(stderr, tty_ ? "\rg4: %s\033[K%s" : "g4: %s%s\n", text.c_str(),
               tty_ && last ? "\n" : "");
  std::fflush(stderr);
}

void ProgressLine::End() {
  if (printed_ && tty_) std::fputs("\n", stderr);
  printed_ = false;
}

ProgressFn PrefillProgress(int interval_ms) {
  auto line = std::make_shared<ProgressLine>(interval_ms);
  return [line](int64_t done, int64_t total) {
    const double s = line->Elapsed();
    char buf[160];
    std::snprintf(buf, sizeof buf, "prefill %lld/%lld tokens, %.0f tok/s",
                  static_cast<long long>(done), static_cast<long long>(total),
                  s > 0 ? static_cast<double>(done) / s : 0.0);
    line->Report(buf, done == total);
  };
}

}  // namespace g4::cli
