// Where the tests find the real checkpoint (Gemma 3 270M Q4_K_M GGUF, scripts/real_model.sh)
// and the transformers reference made from it at test time (scripts/gemma3_real_reference.py,
// the ctest fixture gemma3_reference). Without them a test skips, except under CI (env CI set),
// where it fails: CI's setup must have made them.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace g4::testing {

// $G4_GEMMA3_GGUF, else $XDG_CACHE_HOME (or ~/.cache)/g4/models/gemma-3-270m-q4_k_m.gguf.
inline std::string RealGemma3Path() {
  if (const char* env = std::getenv("G4_GEMMA3_GGUF")) return env;
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  const std::string cache = xdg ? std::string(xdg) : std::string(home ? home : "") + "/.cache";
  return cache + "/g4/models/gemma-3-270m-q4_k_m.gguf";
}

// Skips the test (fails it under CI) when `path` does not exist; `how` says how to make it.
#define G4_REQUIRE_FILE(path, how)                                                       \
  do {                                                                                   \
    if (!std::filesystem::exists(path)) {                                                \
      const std::string why = std::string(path) + " is missing (" + (how) + ")";         \
      if (std::getenv("CI")) FAIL() << why;                                              \
      GTEST_SKIP() << why;                                                               \
    }                                                                                    \
  } while (0)

}  // namespace g4::testing
