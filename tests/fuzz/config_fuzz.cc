// Fuzzes the checkpoint's JSON configuration: config.json (Checkpoint::Open, loader/
// checkpoint.h, then both architectures' readers, model/gemma4/config.h and model/gemma3/
// config.h; LoadQuantizationConfig, loader/compressed_tensors.h) and
// generation_config.json / tokenizer_config.json (ReadSpecialTokenIds, tokenizer/
// special_tokens.h). The input is split at NUL bytes into up to three files, in that order; a
// missing part means the file is absent. JSON text cannot hold a raw NUL, so a seed made of
// real files keeps its shape.
#include <unistd.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/log.h"
#include "fuzz/fuzz_util.h"
#include "loader/compressed_tensors.h"
#include "loader/checkpoint.h"
#include "model/gemma3/config.h"
#include "model/gemma4/config.h"
#include "tokenizer/special_tokens.h"

namespace {

constexpr std::array<const char*, 3> kNames = {"config.json", "generation_config.json",
                                               "tokenizer_config.json"};
constexpr int32_t kVocab = 262144;

struct Dir {
  std::array<g4::fuzz::MemFile*, 3> files{};
  std::string path;

  Dir() {
    char tmpl[] = "/tmp/g4_fuzz_config_XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) std::abort();
    path = tmpl;
    for (size_t i = 0; i < kNames.size(); ++i) files[i] = new g4::fuzz::MemFile(kNames[i]);
    g4::SetLogLevel(g4::LogLevel::kError);  // "last layer forced to full" on most inputs
  }
  // Makes kNames[i] hold `text`, or removes it.
  void Set(size_t i, const std::string_view* text) {
    const std::string link = path + "/" + kNames[i];
    ::unlink(link.c_str());
    if (text == nullptr) return;
    files[i]->Write(reinterpret_cast<const uint8_t*>(text->data()), text->size());
    if (::symlink(files[i]->path().c_str(), link.c_str()) != 0) std::abort();
  }
};

int32_t Lookup(std::string_view piece) {
  if (piece == "<pad>") return 0;
  if (piece == "<eos>") return 1;
  if (piece == "<bos>") return 2;
  if (piece == "<unk>") return 3;
  if (piece == "<turn|>") return 106;
  return -1;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Dir* dir = new Dir();
  std::string_view rest = g4::fuzz::AsText(data, size);
  for (size_t i = 0; i < kNames.size(); ++i) {
    if (rest.data() == nullptr) {
      dir->Set(i, nullptr);
      continue;
    }
    const size_t nul = rest.find('\0');
    std::string_view part = rest.substr(0, nul);
    dir->Set(i, &part);
    rest = nul == std::string_view::npos ? std::string_view() : rest.substr(nul + 1);
  }

  g4::Checkpoint::OpenOptions json_only;
  json_only.weights = false;
  auto ckpt = g4::Checkpoint::Open(dir->path, json_only);
  if (!ckpt.ok()) {
    G4_FUZZ_CHECK(!ckpt.status().message().empty());
  } else {
    for (auto read : {&g4::Gemma4ConfigFromCheckpoint, &g4::Gemma3ConfigFromCheckpoint}) {
      auto config = read(**ckpt);
      if (!config.ok()) {
        G4_FUZZ_CHECK(!config.status().message().empty());
        continue;
      }
      const g4::ModelConfig& c = *config;
      G4_FUZZ_CHECK(c.num_layers > 0 && c.layers.size() == static_cast<size_t>(c.num_layers));
      for (const g4::LayerConfig& l : c.layers) {
        G4_FUZZ_CHECK(l.kv_source >= 0 && l.kv_source <= l.index);
        G4_FUZZ_CHECK(l.head_dim > 0 && l.n_kv_heads > 0 && l.n_heads % l.n_kv_heads == 0);
        G4_FUZZ_CHECK(c.InvFreq(l).size() == static_cast<size_t>(l.head_dim / 2));
      }
    }
  }

  auto quant = g4::LoadQuantizationConfig(dir->path);
  if (quant.ok() && quant->has_value()) {
    const g4::CompressedTensorsConfig& q = **quant;
    G4_FUZZ_CHECK(q.per_channel || q.group_size > 0);
  }

  auto ids = g4::ReadSpecialTokenIds(dir->path, Lookup, kVocab);
  if (ids.ok()) {
    for (int32_t id : ids->stop_ids) G4_FUZZ_CHECK(id >= -1 && id < kVocab);
  }
  return 0;
}
