// Fuzzes SafetensorsFile::Open (loader/safetensors.h) on whole files: the 8-byte header length,
// the JSON header and the data section. Every tensor it accepts must lie inside the mapping and
// hold exactly numel * dtype-size bytes.
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_util.h"
#include "loader/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static g4::fuzz::MemFile* file = new g4::fuzz::MemFile("safetensors");
  auto opened = g4::SafetensorsFile::Open(file->Write(data, size));
  if (!opened.ok()) {
    G4_FUZZ_CHECK(!opened.status().message().empty());
    return 0;
  }
  const g4::SafetensorsFile& st = **opened;
  for (const g4::TensorInfo& t : st.tensors()) {
    G4_FUZZ_CHECK(st.Find(t.name) == &t);
    const auto* begin = static_cast<const uint8_t*>(t.data);
    G4_FUZZ_CHECK(t.nbytes == 0 || begin != nullptr);
    if (t.nbytes > 0) {
      // The mapping holds the same bytes as the input: offsets must fall inside it.
      G4_FUZZ_CHECK(t.nbytes <= size);
      volatile uint8_t first = begin[0], last = begin[t.nbytes - 1];
      (void)first;
      (void)last;
    }
    uint64_t numel = 1;
    for (int64_t d : t.shape) numel *= static_cast<uint64_t>(d);
    G4_FUZZ_CHECK(numel * g4::DTypeSize(t.dtype) == t.nbytes);
  }
  return 0;
}
