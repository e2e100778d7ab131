// KvRows: the K and V arrays of one cache layer in a Memory, `row` values per entry, stored as
// the cache's KvDtype. The ring and the growing array share it, so the dtype is decided in one
// place: which pointers a KvWrite targets (k_cache or k_cache16) and a KvView carries.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/status.h"
#include "model/kv_store.h"
#include "ops/memory.h"

namespace g4 {

class KvRows {
 public:
  KvRows(Memory& memory, KvDtype dtype, int64_t row)
      : dtype_(dtype), row_(row), k_(memory), v_(memory) {}

  // Room for `entries` entries (contents undefined, as Buffer::Allocate).
  Status Allocate(int64_t entries);
  // Zeroes entries [from, to): empty slots are masked by position but must not hold NaN bytes.
  Status Zero(int64_t from, int64_t to);
  // Copies src's first `entries` entries (same dtype and row) to this one's at `at`.
  Status CopyFrom(const KvRows& src, int64_t entries, int64_t at = 0);
  // Copies f32 rows k, v: [C, row] (in the Memory) to entries [at, at + C); f32 storage only.
  Status CopyF32(const float* k, const float* v, int64_t C, int64_t at);

  // Points a KvWrite at these arrays / a view at them (S and pos are the caller's).
  void Target(KvWriteArgs* a);
  void View(KvView* v) const;

  KvDtype dtype() const { return dtype_; }
  size_t entry_bytes() const { return static_cast<size_t>(row_) * KvDtypeSize(dtype_); }
  // Moves when Allocate reallocates.
  const void* storage() const { return k_.data(); }
  bool empty() const { return k_.size() == 0; }

 private:
  Memory& memory() const { return k_.memory(); }

  KvDtype dtype_;
  int64_t row_;
  Buffer<unsigned char> k_, v_;  // [entries, row] as f32 or bf16
};

}  // namespace g4
