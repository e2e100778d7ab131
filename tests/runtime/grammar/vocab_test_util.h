// Tokenizers for the mask tests: a tiny hand-made one (always available) and Gemma 4's real
// 262,144-token vocabulary converted from the npm test dependency (skipped when absent), plus
// the brute-force mask the fast one must equal.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "runtime/grammar/grammar.h"
#include "runtime/grammar/grammar_test_util.h"
#include "tokenizer/gemma4_tokens.h"
#include "tokenizer/test_util.h"
#include "tokenizer/tokenizer.h"

namespace g4::grammar::test {

// Byte tokens 0..255, then JSON-ish pieces, then Gemma 4's control tokens.
inline const Tokenizer* SmallTokenizer() {
  static const Tokenizer* tok = [] {
    const std::vector<std::string> pieces = {
        "{", "}", "[", "]", "\"", "\":", "\",", "\"}", "\"a", "a", "b", "ab", "abc", "1", "12",
        "0", ",", ":", "\u2581", "\u2581\"", "\\n", "\\", "u", "00e9", "\u00e9", "true", "null",
        "name", "\"name\"", "\n", "\n\n", ".", "e", "-", "x\"y", "call", "call:", "get", "get_w",
        "weather", "<", "<|", ">", "|"};
    const std::vector<tokenizer_test::AddedSpec> added = {
        {"<eos>", true}, {"<|\"|>", true}, {"<|tool_call>", true}, {"<tool_call|>", true},
        {"<|turn>", true}};
    auto t = Tokenizer::FromJsonText(tokenizer_test::MakeTokenizerJson(pieces, {}, added),
                                     "small");
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return t.ok() ? std::move(t).value().release() : nullptr;
  }();
  return tok;
}

inline const Tokenizer* Gemma4Tokenizer() { return tokenizer_test::NpmGemma4Tokenizer(); }

inline std::shared_ptr<const VocabIndex> Gemma4Vocab() {
  static const std::shared_ptr<const VocabIndex> v =
      Gemma4Tokenizer() ? VocabIndex::Build(*Gemma4Tokenizer()) : nullptr;
  return v;
}

// A token's symbols, derived independently of VocabIndex.
inline std::vector<int> TokenSymbols(const Tokenizer& tok, int32_t id) {
  if (!tok.HasId(id)) return {};
  const TokenKind kind = tok.Kind(id);
  if (kind != TokenKind::kNormal && kind != TokenKind::kByte) {
    const std::string_view p = tok.Piece(id);
    if (p == gemma4::kQuote) return {kSymQuote};
    if (p == gemma4::kToolCallStart) return {kSymToolCallStart};
    if (p == gemma4::kToolCallEnd) return {kSymToolCallEnd};
    if (kind != TokenKind::kAdded) return {};
  }
  const std::string_view piece = tok.Piece(id);
  if (tok.Kind(id) == TokenKind::kAdded &&
      (piece.rfind("<unused", 0) == 0 || piece == "<mask>" || piece == "[multimodal]")) {
    return {};  // control placeholders, never allowed
  }
  std::string text;
  if (!tok.AppendDecoded(id, DecodeOptions{}, &text).ok()) return {};
  std::vector<int> out;
  for (unsigned char c : text) out.push_back(c);
  return out;
}

// Checks FillMask after `prefix` against trying every id (every `stride`-th) from scratch.
inline void ExpectMaskMatchesBruteForce(const std::shared_ptr<const Grammar>& g,
                                        const Tokenizer& tok,
                                        const std::shared_ptr<const VocabIndex>& vocab,
                                        const std::string& prefix, int32_t eos, int stride = 1) {
  GrammarMatcher m(g, vocab, {eos});
  ASSERT_TRUE(m.AcceptSymbols(Syms(prefix))) << prefix;
  std::vector<uint8_t> mask(tok.vocab_size(), 7);
  m.FillMask(mask);
  const std::vector<int> pre = Syms(prefix);
  int mismatches = 0;
  for (int32_t id = 0; id < tok.vocab_size(); id += stride) {
    bool expect;
    if (id == eos) {
      expect = m.IsComplete();
    } else {
      const std::vector<int> s = TokenSymbols(tok, id);
      GrammarMatcher b(g, vocab, {eos});
      expect = !s.empty() && b.AcceptSymbols(pre) && b.AcceptSymbols(s);
    }
    if (mask[id] != (expect ? 1 : 0) && ++mismatches <= 5) {
      ADD_FAILURE() << "prefix '" << prefix << "' token " << id << " '" << tok.Piece(id)
                    << "': mask " << int(mask[id]) << ", brute force " << expect;
    }
  }
  EXPECT_EQ(mismatches, 0) << "prefix '" << prefix << "'";
}

}  // namespace g4::grammar::test
