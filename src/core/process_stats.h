// Process resource readings for logs and tests (Linux /proc).
#pragma once

#include <cstdint>

namespace g4 {

// Resident set size in bytes; 0 if unknown.
uint64_t ResidentBytes();
// Peak resident set size (VmHWM) in bytes; 0 if unknown.
uint64_t PeakResidentBytes();
// The machine's available memory (MemAvailable: free plus reclaimable page cache) in bytes; 0
// if unknown.
uint64_t AvailableMemoryBytes();

}  // namespace g4
