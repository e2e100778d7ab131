// Resident-memory hints for memory-mapped checkpoint data.
#pragma once

#include <cstddef>

namespace g4 {

// Drops the whole pages inside [p, p + n) of a read-only file mapping from this process's
// resident set (madvise MADV_DONTNEED). The data stays valid: the next read faults the page back
// in from the page cache. Use it after a one-off pass (e.g. quantizing a copy at load) over a
// tensor that is otherwise only sampled. Best effort: errors are ignored. Never call it on
// memory that was written (anonymous or copy-on-write pages would be lost).
void ReleaseMappedPages(const void* p, size_t n);

}  // namespace g4
