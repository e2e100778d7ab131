// Fuzzes GgufFile::Open (loader/gguf.h) on whole files: header, typed metadata (nested arrays
// included), tensor table and data layout. Every tensor it accepts must lie inside the mapping,
// and every metadata accessor must answer or refuse without reading out of bounds.
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_util.h"
#include "loader/gguf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static g4::fuzz::MemFile* file = new g4::fuzz::MemFile("gguf");
  auto opened = g4::GgufFile::Open(file->Write(data, size));
  if (!opened.ok()) {
    G4_FUZZ_CHECK(!opened.status().message().empty());
    return 0;
  }
  const g4::GgufFile& g = **opened;
  // The data section must start inside the file once it holds a tensor (every tensor has at
  // least one element); a tensor-less file may stop before the alignment padding.
  G4_FUZZ_CHECK(g.tensors().empty() || g.data_offset() <= size);
  for (const auto& [key, value] : g.metadata()) {
    G4_FUZZ_CHECK(g.Has(key));
    // Strings point into the mapping: touching their ends faults if they run outside it.
    for (std::string_view s : value.strs) {
      if (!s.empty()) {
        volatile char first = s.front(), last = s.back();
        (void)first;
        (void)last;
      }
    }
    (void)g.GetString(key);
    (void)g.GetInt(key);
    (void)g.GetFloat(key);
    (void)g.GetBool(key);
    (void)g.GetIntArray(key);
    (void)g.GetFloatArray(key);
    (void)g.GetBoolArray(key);
    (void)g.GetStringArray(key);
  }
  for (const g4::GgufTensorInfo& t : g.tensors()) {
    G4_FUZZ_CHECK(t.nbytes <= size);
    if (t.nbytes > 0) {
      const auto* p = static_cast<const uint8_t*>(t.data);
      volatile uint8_t first = p[0], last = p[t.nbytes - 1];
      (void)first;
      (void)last;
    }
    G4_FUZZ_CHECK(g.Find(t.name) != nullptr);
    (void)g.Tensor(t.name);
  }
  return 0;
}
