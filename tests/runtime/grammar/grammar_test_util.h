// Helpers for the grammar tests: text -> symbols (Gemma control tokens spelled out become their
// symbols), and feeding a matcher symbol by symbol to find where it rejects.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/grammar/grammar.h"

namespace g4::grammar::test {

inline std::vector<int> Syms(std::string_view text) {
  std::vector<int> out;
  const std::pair<std::string_view, int> specials[] = {
      {"<|\"|>", kSymQuote},
      {"<|tool_call>", kSymToolCallStart},
      {"<tool_call|>", kSymToolCallEnd}};
  for (size_t i = 0; i < text.size();) {
    bool matched = false;
    for (const auto& [s, sym] : specials) {
      if (text.substr(i, s.size()) == s) {
        out.push_back(sym);
        i += s.size();
        matched = true;
        break;
      }
    }
    if (!matched) out.push_back(static_cast<uint8_t>(text[i++]));
  }
  return out;
}

// The index of the first rejected symbol of `text`, or -1 if all are accepted; *complete tells
// whether the matcher is complete after the accepted prefix.
inline int RejectAt(const std::shared_ptr<const Grammar>& g, std::string_view text,
                    bool* complete = nullptr) {
  GrammarMatcher m(g, nullptr, {});
  const std::vector<int> syms = Syms(text);
  int at = -1;
  for (size_t k = 0; k < syms.size(); ++k) {
    const int s = syms[k];
    if (!m.AcceptSymbols(std::span<const int>(&s, 1))) {
      at = static_cast<int>(k);
      break;
    }
  }
  if (complete != nullptr) *complete = m.IsComplete();
  return at;
}

// Accepted whole and complete.
inline bool Matches(const std::shared_ptr<const Grammar>& g, std::string_view text) {
  bool complete = false;
  return RejectAt(g, text, &complete) < 0 && complete;
}

inline std::shared_ptr<const Grammar> MustCompile(const nlohmann::ordered_json& schema) {
  auto g = CompileJsonSchema(schema, "schema");
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  return g.ok() ? *g : nullptr;
}

}  // namespace g4::grammar::test
