// ReleaseMappedPages (see page_advice.h): madvise on the page-aligned interior of the range.
#include "loader/page_advice.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>

namespace g4 {

void ReleaseMappedPages(const void* p, size_t n) {
  if (p == nullptr || n == 0) return;
  const long page_size = sysconf(_SC_PAGESIZE);
  const uintptr_t page = page_size > 0 ? static_cast<uintptr_t>(page_size) : 4096;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + page - 1) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + n) / page * page;
  if (end <= begin) return;
  (void)madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

}  // namespace g4
