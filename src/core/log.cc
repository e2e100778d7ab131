#include "core/log.h"

#include <atomic>
#include <cstdio>

namespace g4 {
namespace {
std::atomic<LogLevel> g_level{LogLevel::kInfo};
}

void SetLogLevel(LogLevel level) { g_level = level; }

void Log(LogLevel level, const std::string& message) {
  if (level < g_level.load()) return;
  const char* tag = level == LogLevel::kWarning ? "warning: " : level == LogLevel::kError ? "error: " : "";
  std::fprintf(stderr, "g4: %s%s\n", tag, message.c_str());
}

}  // namespace g4
