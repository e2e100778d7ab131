#include "core/process_stats.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace g4 {

uint64_t ResidentBytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long long size = 0, resident = 0;
  const int n = std::fscanf(f, "%llu %llu", &size, &resident);
  std::fclose(f);
  if (n != 2) return 0;
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

namespace {

// The "KEY: N kB" line of a /proc file, in bytes; 0 if absent.
uint64_t ProcKilobytes(const char* path, const char* key) {
  std::FILE* f = std::fopen(path, "r");
  if (!f) return 0;
  char line[256];
  uint64_t kb = 0;
  const size_t n = std::strlen(key);
  while (std::fgets(line, sizeof line, f)) {
    if (std::strncmp(line, key, n) == 0) {
      kb = std::strtoull(line + n, nullptr, 10);
      break;
    }
  }
  std::fclose(f);
  return kb * 1024;
}

}  // namespace

uint64_t PeakResidentBytes() { return ProcKilobytes("/proc/self/status", "VmHWM:"); }

uint64_t AvailableMemoryBytes() { return ProcKilobytes("/proc/meminfo", "MemAvailable:"); }

}  // namespace g4
