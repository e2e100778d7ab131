// Tests of the encode/decode pipeline on small hand-made vocabularies: merge ranks and ties, byte
// fallback, added tokens (leftmost-longest, special on/off), the newline-run split, invalid
// UTF-8, decode options, and a randomized comparison against a naive reference implementation of
// the same rules (which also checks the word cutting and caching shortcuts).
#include "tokenizer/tokenizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <random>

#include "tokenizer/test_util.h"
#include "tokenizer/utf8.h"

namespace g4 {
namespace {

using tokenizer_test::AddedSpec;
using tokenizer_test::MakeTokenizerJson;
using Merges = std::vector<std::pair<std::string, std::string>>;

std::unique_ptr<Tokenizer> Make(const std::vector<std::string>& pieces, const Merges& merges,
                                const std::vector<AddedSpec>& added = {}) {
  auto t = Tokenizer::FromJsonText(MakeTokenizerJson(pieces, merges, added), "test");
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? std::move(t).value() : nullptr;
}

std::vector<int32_t> Ids(const Tokenizer& t, const std::vector<std::string>& pieces) {
  std::vector<int32_t> ids;
  for (const std::string& p : pieces) {
    const int32_t id = t.TokenId(p);
    EXPECT_GE(id, 0) << "no piece '" << p << "'";
    ids.push_back(id);
  }
  return ids;
}

TEST(TokenizerTest, LowestRankMergesFirst) {
  auto t = Make({"a", "b", "c", "ab", "bc", "abc"}, {{"a", "b"}, {"b", "c"}, {"ab", "c"}});
  EXPECT_EQ(t->Encode("abc"), Ids(*t, {"abc"}));
  auto u = Make({"a", "b", "c", "ab", "bc"}, {{"b", "c"}, {"a", "b"}});
  EXPECT_EQ(u->Encode("abc"), Ids(*u, {"a", "bc"}));
}

TEST(TokenizerTest, EqualRanksMergeLeftmostFirst) {
  auto t = Make({"a", "aa"}, {{"a", "a"}});
  EXPECT_EQ(t->Encode("aaa"), Ids(*t, {"aa", "a"}));
  EXPECT_EQ(t->Encode("aaaa"), Ids(*t, {"aa", "aa"}));
}

TEST(TokenizerTest, SpacesBecomeMetaspaceWithoutPrefix) {
  auto t = Make({"a", "\u2581", "\u2581a", "\u2581\u2581"}, {{"\u2581", "a"}, {"\u2581", "\u2581"}});
  EXPECT_EQ(t->Encode("a a"), Ids(*t, {"a", "\u2581a"}));
  EXPECT_EQ(t->Encode("  a"), Ids(*t, {"\u2581", "\u2581a"}));  // (▁, a) ranks first
  EXPECT_EQ(t->Encode("  "), Ids(*t, {"\u2581\u2581"}));
  EXPECT_EQ(*t->Decode(t->Encode(" a  a ")), " a  a ");
}

TEST(TokenizerTest, UnknownCharactersFallBackToBytes) {
  auto t = Make({"a"}, {});
  // 😊 = F0 9F 98 8A; byte pieces are ids 0..255 in these vocabularies.
  EXPECT_EQ(t->Encode("a😊"), (std::vector<int32_t>{t->TokenId("a"), 0xF0, 0x9F, 0x98, 0x8A}));
  EXPECT_EQ(*t->Decode(t->Encode("a😊a")), "a😊a");
}

TEST(TokenizerTest, InvalidUtf8IsEncodedAsBytesAndRoundTrips) {
  auto t = Make({"a", "b", "ab"}, {{"a", "b"}});
  const std::string bad = "a\xFF" "b\xE2\x96" "ab\xC0\x80\xED\xA0\x80";
  const std::vector<int32_t> ids = t->Encode(bad);
  EXPECT_EQ(ids, (std::vector<int32_t>{t->TokenId("a"), 0xFF, t->TokenId("b"), 0xE2, 0x96,
                                       t->TokenId("ab"), 0xC0, 0x80, 0xED, 0xA0, 0x80}));
  EXPECT_EQ(*t->Decode(ids), bad);
}

TEST(TokenizerTest, AddedTokensMatchLeftmostLongestBeforeBpe) {
  auto t = Make({"a", "<", ">", "x"}, {},
                {{"<x>", true}, {"<x><x>", false}, {"\n", false}, {"\n\n", false}});
  EXPECT_EQ(t->Encode("a<x><x>a"), Ids(*t, {"a", "<x><x>", "a"}));
  EXPECT_EQ(t->Encode("<x>a<x>"), Ids(*t, {"<x>", "a", "<x>"}));
  EXPECT_EQ(t->Encode("\n\n\n"), Ids(*t, {"\n\n", "\n"}));
  EXPECT_EQ(t->Encode("<x"), Ids(*t, {"<", "x"}));
}

TEST(TokenizerTest, SpecialTokensInTextCanBeTreatedAsText) {
  auto t = Make({"a", "<", ">", "s", "/"}, {}, {{"<s>", true}, {"</s>", false}});
  EXPECT_EQ(t->Encode("a<s>"), Ids(*t, {"a", "<s>"}));
  EncodeOptions plain;
  plain.parse_special = false;
  EXPECT_EQ(t->Encode("a<s>", plain), Ids(*t, {"a", "<", "s", ">"}));
  // Non-special added tokens are always recognised.
  EXPECT_EQ(t->Encode("</s>", plain), Ids(*t, {"</s>"}));
}

TEST(TokenizerTest, NewlineRunsAreSeparateWordsAndWholeWhenInVocab) {
  // No newline added tokens here (as in Gemma 4's file, possibly): the split does the work.
  auto t = Make({"a", "\n", "\n\n", "a\n", "\n\n\n\n"},
                {{"a", "\n"}, {"\n", "\n"}, {"\n\n", "\n\n"}});
  // "a\n" would merge if the line and the newline were one word; they are not.
  EXPECT_EQ(t->Encode("a\na"), Ids(*t, {"a", "\n", "a"}));
  // A run that is a piece stays whole; others go through BPE.
  EXPECT_EQ(t->Encode("\n\n\n\n"), Ids(*t, {"\n\n\n\n"}));
  EXPECT_EQ(t->Encode("\n\n\n"), Ids(*t, {"\n\n", "\n"}));
}

TEST(TokenizerTest, MergesAcrossSpacesOnlyWhereAPieceSpansThem) {
  // ">▁<" is a piece (like Gemma's ">▁</"), so a word cut before "▁" must not happen after '>'.
  auto t = Make({"a", ">", "<", "\u2581", ">\u2581", ">\u2581<", "\u2581a"},
                {{">", "\u2581"}, {">\u2581", "<"}, {"\u2581", "a"}});
  EXPECT_EQ(t->Encode("> <"), Ids(*t, {">\u2581<"}));
  EXPECT_EQ(t->Encode("a a"), Ids(*t, {"a", "\u2581a"}));
}

TEST(TokenizerTest, AddBosOnce) {
  auto t = Make({"a"}, {}, {{"<bos>", true}});
  EncodeOptions o;
  o.add_bos = true;
  const int32_t bos = t->TokenId("<bos>");
  ASSERT_EQ(t->special_ids().bos, bos);
  EXPECT_EQ(t->Encode("a", o), (std::vector<int32_t>{bos, t->TokenId("a")}));
  EXPECT_EQ(t->Encode("<bos>a", o), (std::vector<int32_t>{bos, t->TokenId("a")}));
  EXPECT_EQ(t->Encode("a"), (std::vector<int32_t>{t->TokenId("a")}));
}

TEST(TokenizerTest, DecodeSkipsSpecialTokensButKeepsToolMarkers) {
  auto t = Make({"a"}, {}, {{"<bos>", true}, {"<|tool_call>", true}, {"<|\"|>", true},
                            {"<turn|>", true}, {"<b>", false}});
  const std::vector<int32_t> ids =
      t->Encode("<bos>a<|tool_call>a<|\"|><b><turn|>");
  EXPECT_EQ(*t->Decode(ids), "<bos>a<|tool_call>a<|\"|><b><turn|>");
  DecodeOptions skip;
  skip.skip_special = true;
  EXPECT_EQ(*t->Decode(ids, skip), "a<|tool_call>a<|\"|><b>");
  EXPECT_EQ(t->Kind(t->TokenId("<turn|>")), TokenKind::kSpecial);
  EXPECT_EQ(t->Kind(t->TokenId("<|tool_call>")), TokenKind::kSpecialAsText);
  EXPECT_EQ(t->Kind(t->TokenId("<b>")), TokenKind::kAdded);
  EXPECT_EQ(t->Kind(0x41), TokenKind::kByte);
}

TEST(TokenizerTest, DecodeRejectsIdsOutsideTheVocabulary) {
  auto t = Make({"a"}, {});
  auto r = t->Decode(std::vector<int32_t>{t->TokenId("a"), t->vocab_size()});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), ::testing::HasSubstr("position 1"));
  EXPECT_FALSE(t->Decode(std::vector<int32_t>{-1}).ok());
}

TEST(TokenizerTest, LongInputsStayFast) {
  // One 2 MB "word" (no spaces, no newlines): quadratic merging would take minutes.
  auto t = Make({"a", "aa", "aaaa", "aaaaaaaa"}, {{"a", "a"}, {"aa", "aa"}, {"aaaa", "aaaa"}});
  const std::string text(2 << 20, 'a');
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<int32_t> ids = t->Encode(text);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(ids.size(), text.size() / 8);
  EXPECT_LT(s, 10.0);
}

// ---- randomized comparison with a naive implementation of the same rules ----

struct Reference {
  std::map<std::string, int32_t> vocab;
  std::map<std::pair<std::string, std::string>, size_t> rank;
  std::vector<std::string> added;  // longest match wins
  std::map<std::string, bool> special;

  std::vector<int32_t> Bpe(const std::string& word) const {
    std::vector<std::string> syms;
    for (size_t i = 0; i < word.size();) {
      size_t n = utf8::DecodeOne(std::string_view(word).substr(i));
      if (n == 0) n = 1;
      syms.push_back(word.substr(i, n));
      i += n;
    }
    while (true) {  // O(n^2): fine for tests
      size_t best = SIZE_MAX, at = 0;
      for (size_t i = 0; i + 1 < syms.size(); ++i) {
        const auto it = rank.find({syms[i], syms[i + 1]});
        if (it != rank.end() && it->second < best) {
          best = it->second;
          at = i;
        }
      }
      if (best == SIZE_MAX) break;
      syms[at] += syms[at + 1];
      syms.erase(syms.begin() + static_cast<std::ptrdiff_t>(at) + 1);
    }
    std::vector<int32_t> ids;
    for (const std::string& s : syms) {
      const auto it = vocab.find(s);
      if (it != vocab.end()) {
        ids.push_back(it->second);
      } else {
        for (unsigned char c : s) ids.push_back(c);  // byte pieces are ids 0..255
      }
    }
    return ids;
  }

  std::vector<int32_t> Encode(const std::string& text, bool parse_special) const {
    std::vector<int32_t> ids;
    std::string pending;
    auto flush = [&] {
      std::string norm;
      for (char c : pending) norm += c == ' ' ? std::string("\u2581") : std::string(1, c);
      for (size_t i = 0; i < norm.size();) {
        size_t j = i;
        const bool nl = norm[i] == '\n';
        while (j < norm.size() && (norm[j] == '\n') == nl) ++j;
        const std::string run = norm.substr(i, j - i);
        if (nl && vocab.count(run)) {
          ids.push_back(vocab.at(run));
        } else {
          for (int32_t id : Bpe(run)) ids.push_back(id);
        }
        i = j;
      }
      pending.clear();
    };
    for (size_t i = 0; i < text.size();) {
      size_t best = 0;
      for (const std::string& a : added) {
        if (!parse_special && special.at(a)) continue;
        if (a.size() > best && text.compare(i, a.size(), a) == 0) best = a.size();
      }
      if (best) {
        flush();
        ids.push_back(vocab.at(text.substr(i, best)));
        i += best;
      } else {
        pending += text[i++];
      }
    }
    flush();
    return ids;
  }
};

TEST(TokenizerTest, MatchesANaiveReferenceOnRandomInputs) {
  std::mt19937 rng(1234);
  const std::vector<std::string> alphabet = {"a", "b", "c", "\u2581", "\n", ">", "é", "😊"};
  for (int trial = 0; trial < 40; ++trial) {
    // A random vocabulary: the alphabet plus pieces built by random merges.
    std::vector<std::string> pieces(alphabet.begin(), alphabet.end() - 1);  // 😊 by bytes
    Merges merges;
    Reference ref;
    for (int k = 0; k < 60; ++k) {
      const std::string& x = pieces[rng() % pieces.size()];
      const std::string& y = pieces[rng() % pieces.size()];
      if (ref.rank.count({x, y}) || x.size() + y.size() > 24) continue;
      ref.rank[{x, y}] = merges.size();
      merges.push_back({x, y});
      if (std::find(pieces.begin(), pieces.end(), x + y) == pieces.end()) pieces.push_back(x + y);
    }
    const std::vector<AddedSpec> added = {{"<s>", true}, {"\n\n", false}, {"ab", false}};
    auto t = Make(pieces, merges, added);
    ASSERT_NE(t, nullptr);
    for (const std::string& p : pieces) ref.vocab[p] = t->TokenId(p);
    for (const AddedSpec& a : added) {
      ref.vocab[a.content] = t->TokenId(a.content);
      ref.added.push_back(a.content);
      ref.special[a.content] = a.special;
    }
    for (int n = 0; n < 50; ++n) {
      std::string text;
      const int len = static_cast<int>(rng() % 60);
      for (int i = 0; i < len; ++i) {
        const int r = static_cast<int>(rng() % 14);
        if (r < 8) {
          text += alphabet[static_cast<size_t>(r)];
        } else if (r < 11) {
          text += ' ';
        } else if (r == 11) {
          text += "<s>";
        } else if (r == 12) {
          text += '\xFF';
        } else {
          text += "\xE2\x96";  // a truncated ▁
        }
      }
      for (bool parse_special : {true, false}) {
        EncodeOptions o;
        o.parse_special = parse_special;
        ASSERT_EQ(t->Encode(text, o), ref.Encode(text, parse_special))
            << "trial " << trial << " text '" << text << "'";
      }
      // Decode gives back the text, with U+2581 as a space.
      std::string expected;
      for (size_t p = 0; p < text.size();) {
        if (text.compare(p, 3, "\u2581") == 0) {
          expected += ' ';
          p += 3;
        } else {
          expected += text[p++];
        }
      }
      ASSERT_EQ(*t->Decode(t->Encode(text)), expected);
    }
  }
}

}  // namespace
}  // namespace g4
