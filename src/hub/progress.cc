#include "hub/progress.h"

#include <unistd.h>

#include <cmath>

namespace g4::hub {

std::string FormatBytes(uint64_t n) {
  char buf[32];
  const double v = static_cast<double>(n);
  if (n < 1000) {
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(n));
  } else if (n < 1000 * 1000) {
    std::snprintf(buf, sizeof buf, "%.1f kB", v / 1e3);
  } else if (n < 1000ull * 1000 * 1000) {
    std::snprintf(buf, sizeof buf, "%.1f MB", v / 1e6);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f GB", v / 1e9);
  }
  return buf;
}

std::string FormatProgress(const std::string& name, uint64_t done, uint64_t total, double rate,
                           double eta_s) {
  std::string s = name + "  " + FormatBytes(done) + " / " + FormatBytes(total);
  if (total > 0) s += "  " + std::to_string(done * 100 / total) + "%";
  if (rate > 0) s += "  " + FormatBytes(static_cast<uint64_t>(rate)) + "/s";
  if (eta_s >= 0) s += "  ETA " + std::to_string(static_cast<long long>(std::ceil(eta_s))) + "s";
  return s;
}

Progress::Progress(std::string name, uint64_t total, uint64_t resumed, double interval_s)
    : name_(std::move(name)),
      total_(total),
      resumed_(resumed),
      interval_s_(interval_s),
      start_(Clock::now()),
      last_print_(start_),
      tty_(isatty(STDERR_FILENO)) {}

void Progress::Update(uint64_t done) {
  const auto now = Clock::now();
  if (std::chrono::duration<double>(now - last_print_).count() < interval_s_) return;
  last_print_ = now;
  Print(done, false);
}

void Progress::Finish(uint64_t done) { Print(done, true); }

void Progress::Print(uint64_t done, bool last) {
  const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
  const double rate = elapsed > 0 && done > resumed_ ? (done - resumed_) / elapsed : 0;
  const double eta = last ? 0 : rate > 0 && total_ >= done ? (total_ - done) / rate : -1;
  const std::string line = "g4: " + FormatProgress(name_, done, total_, rate, eta);
  if (tty_) {
    std::fprintf(stderr, "\r%s\033[K%s", line.c_str(), last ? "\n" : "");
  } else {
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  std::fflush(stderr);
  printed_ = true;
}

}  // namespace g4::hub
