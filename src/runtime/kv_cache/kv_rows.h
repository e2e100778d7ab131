// KvRows: the K and V arrays of one cache layer in a Memory, `row` values per entry, stored as
// the cache's KvDtype. The ring and the growing array share it, so the dtype is decided in one
// place: which pointers a KvWrite targets (k_cache, k_cache16 or k_cache8 and its scales) and a
// KvView carries. A q8 cache keeps its blocks' scales in arrays of their own beside the int8
// values, entry for entry, so every copy below moves both.
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
      : dtype_(dtype), row_(row), k_(memory), v_(memory), ks_(memory), vs_(memory) {}

  // Room for `entries` entries (contents undefined, as Buffer::Allocate).
  Status Allocate(int64_t entries);
  // Zeroes entries [from, to): empty slots are masked by position but must not hold NaN bytes.
  Status Zero(int64_t from, int64_t to);
  // Copies src's `entries` entries from `from` (same dtype and row; src may be this one, the
  // ranges apart) to this one's at `at`.
  Status CopyFrom(const KvRows& src, int64_t entries, int64_t at = 0, int64_t from = 0);
  // Copies f32 rows k, v: [C, row] (in the Memory) to entries [at, at + C); f32 storage only.
  Status CopyF32(const float* k, const float* v, int64_t C, int64_t at);

  // Points a KvWrite at these arrays / a view at them (S and pos are the caller's).
  void Target(KvWriteArgs* a);
  void View(KvView* v) const;

  KvDtype dtype() const { return dtype_; }
  int64_t row() const { return row_; }
  Memory& memory() const { return k_.memory(); }
  // K or V alone (q8: with its scales).
  size_t entry_bytes() const { return KvRowBytes(dtype_, row_); }
  // Moves when Allocate reallocates.
  const void* storage() const { return k_.data(); }
  bool empty() const { return k_.size() == 0; }

 private:
  // The arrays and the bytes each holds per entry: K and V, then (q8) their scales.
  template <class B>
  struct PlaneOf {
    B* buffer;
    size_t bytes;
  };
  using Plane = PlaneOf<Buffer<unsigned char>>;
  using ConstPlane = PlaneOf<const Buffer<unsigned char>>;
  int Planes(Plane* out);
  int Planes(ConstPlane* out) const;  // a copy's source
  template <class Self, class P>
  static int PlanesOf(Self& self, P* out);

  KvDtype dtype_;
  int64_t row_;
  Buffer<unsigned char> k_, v_;    // [entries, row] as f32, bf16 or int8
  Buffer<unsigned char> ks_, vs_;  // q8: [entries, row / kQ8Block] f32 scales; otherwise empty
};

}  // namespace g4
