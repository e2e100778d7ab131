// Fuzzes WeightStore::OpenDir (loader/weight_store.h) through model.safetensors.index.json: the
// input is the index, in a directory that also holds two small valid shards (a.safetensors with
// tensors "x" and "y", b.safetensors with "z"), so the fuzzer can reach the shard-name checks,
// the shard opening and the cross-check of the weight map against the shards.
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

#include "fuzz/fuzz_util.h"
#include "loader/weight_store.h"

namespace {

// A safetensors file whose header is `header` followed by `data_bytes` zero bytes.
void WriteShard(const std::string& path, const std::string& header, size_t data_bytes) {
  std::ofstream out(path, std::ios::binary);
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>((n >> (8 * i)) & 0xff));
  out << header << std::string(data_bytes, '\0');
  if (!out) std::abort();
}

// The directory: fixed shards plus an index symlinked to the memfd the input is written to.
struct Dir {
  g4::fuzz::MemFile index{"index"};
  std::string path;

  Dir() {
    char tmpl[] = "/tmp/g4_fuzz_index_XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) std::abort();
    path = tmpl;
    WriteShard(path + "/a.safetensors",
               R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
               R"("y":{"dtype":"BF16","shape":[2,1],"data_offsets":[8,12]}})",
               12);
    WriteShard(path + "/b.safetensors",
               R"({"__metadata__":{"format":"pt"},"z":{"dtype":"I8","shape":[3],)"
               R"("data_offsets":[0,3]}})",
               3);
    // The link resolves in this process only, which is the one that opens it.
    if (::symlink(index.path().c_str(), (path + "/" + g4::kSafetensorsIndexName).c_str()) != 0) {
      std::abort();
    }
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Dir* dir = new Dir();
  dir->index.Write(data, size);
  auto store = g4::WeightStore::OpenDir(dir->path);
  if (!store.ok()) {
    G4_FUZZ_CHECK(!store.status().message().empty());
    return 0;
  }
  size_t total = 0;
  for (const std::string& name : (*store)->Names()) {
    const g4::TensorInfo* t = (*store)->Find(name);
    G4_FUZZ_CHECK(t != nullptr && t->name == name);
    total += t->nbytes;
  }
  G4_FUZZ_CHECK(total == (*store)->total_bytes());
  G4_FUZZ_CHECK(total <= 15);  // the shards hold 12 + 3 bytes of tensors
  return 0;
}
