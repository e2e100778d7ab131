// The SentencePiece ("llama") GGUF tokenizer on small hand-made vocabularies written with the GGUF
// writer: the merge order derived from scores (spm_merges.h), score ties, byte fallback,
// user-defined and control tokens, the respelled whitespace runs, special ids, agreement with a
// naive SentencePiece encoder, and errors that name the file and key. Gemma 3's real file:
// gguf_spm_gemma3_test.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>

#include "chat/chat.h"
#include "loader/gguf_writer.h"
#include "tokenizer/gguf_vocab.h"
#include "tokenizer/spm_merges.h"
#include "tokenizer/spm_reference.h"
#include "tokenizer/spm_vocab.h"
#include "tokenizer/test_util.h"

namespace g4 {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using tokenizer_test::ScopedTempDir;

constexpr int32_t kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kByte = 6;

struct SpmVocab {
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;

  int32_t Add(const std::string& piece, float score, int32_t type) {
    tokens.push_back(piece);
    scores.push_back(score);
    types.push_back(type);
    return static_cast<int32_t>(tokens.size()) - 1;
  }
  // The pieces as SentencePiece spells them (the GGUF converter writes "▁" runs as spaces).
  std::vector<std::string> SentencePieceSpelling() const {
    std::vector<std::string> out = tokens;
    for (size_t i = 0; i < out.size(); ++i) {
      if (types[i] == kUserDefined && !out[i].empty() &&
          out[i].find_first_not_of(' ') == std::string::npos) {
        std::string s;
        for (size_t k = 0; k < out[i].size(); ++k) s += "\xE2\x96\x81";
        out[i] = s;
      }
    }
    return out;
  }
};

// A Gemma-shaped vocabulary: control tokens first, user-defined newline / space runs and a tag,
// the 256 byte tokens, then normal pieces with scores that fall with the id, as in Gemma.
SpmVocab TinyVocab() {
  SpmVocab v;
  v.Add("<pad>", -1000, kControl);              // 0
  v.Add("<eos>", -1000, kControl);              // 1
  v.Add("<bos>", -1000, kControl);              // 2
  v.Add("<unk>", -1000, kUnknown);              // 3
  v.Add("<start_of_turn>", -1000, kControl);    // 4
  v.Add("<end_of_turn>", -1000, kControl);      // 5
  v.Add("<unused0>", -1000, kControl);          // 6
  v.Add("\n", -1000, kUserDefined);             // 7
  v.Add("\n\n", -1000, kUserDefined);           // 8
  v.Add("  ", -1000, kUserDefined);             // 9: "▁▁" in SentencePiece
  v.Add("   ", -1000, kUserDefined);            // 10: "▁▁▁"
  v.Add("<b>", -1000, kUserDefined);            // 11
  for (int b = 0; b < 256; ++b) {               // 12..267
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    v.Add(name, 0, kByte);
  }
  v.Add("cd", -1, kNormal);     // 268
  v.Add("ab", -2, kNormal);     // 269
  v.Add("bc", -3, kNormal);     // 270
  v.Add("▁a", -4, kNormal);     // 271
  v.Add("▁ab", -5, kNormal);    // 272
  v.Add("▁b", -6, kNormal);     // 273
  v.Add("yx", -7, kNormal);     // 274: the same score as "xy", lower id
  v.Add("xy", -7, kNormal);     // 275
  v.Add("é日", -8, kNormal);    // 276
  float s = -100;
  for (const char* c : {"▁", "a", "b", "c", "d", "x", "y", "é", "日"}) v.Add(c, s--, kNormal);
  return v;                     // 277.. single characters
}

constexpr int32_t kCd = 268, kAb = 269, kSpaceA = 271, kSpaceAb = 272, kSpaceB = 273, kYx = 274,
                  kXy = 275, kEJi = 276, kSpace = 277, kA = 278, kB = 279, kC = 280, kD = 281,
                  kX = 282, kY = 283;
constexpr int32_t kTwoSpaces = 9, kThreeSpaces = 10, kTag = 11, kNewline = 7, kNewline2 = 8;
int32_t ByteId(uint8_t b) { return 12 + b; }

// Writes `v` as a tensor-less "llama" GGUF; `edit` adds keys, `skip` leaves keys out.
Status WriteSpmGguf(const SpmVocab& v, const std::string& path,
                    const std::function<void(GgufMetadata*)>& edit = nullptr,
                    const std::vector<std::string>& skip = {}) {
  auto wanted = [&](const char* k) { return std::find(skip.begin(), skip.end(), k) == skip.end(); };
  GgufMetadata md;
  md.SetString("general.architecture", "gemma3");
  if (wanted("tokenizer.ggml.model")) md.SetString("tokenizer.ggml.model", "llama");
  if (wanted("tokenizer.ggml.tokens")) md.SetStringArray("tokenizer.ggml.tokens", v.tokens);
  if (wanted("tokenizer.ggml.scores")) md.SetF32Array("tokenizer.ggml.scores", v.scores);
  if (wanted("tokenizer.ggml.token_type")) md.SetI32Array("tokenizer.ggml.token_type", v.types);
  if (wanted("tokenizer.ggml.bos_token_id")) md.SetU32("tokenizer.ggml.bos_token_id", 2);
  if (wanted("tokenizer.ggml.eos_token_id")) md.SetU32("tokenizer.ggml.eos_token_id", 1);
  if (wanted("tokenizer.ggml.unknown_token_id")) md.SetU32("tokenizer.ggml.unknown_token_id", 3);
  if (wanted("tokenizer.ggml.padding_token_id")) md.SetU32("tokenizer.ggml.padding_token_id", 0);
  if (wanted("tokenizer.ggml.add_bos_token")) md.SetBool("tokenizer.ggml.add_bos_token", true);
  if (wanted("tokenizer.ggml.add_space_prefix")) {
    md.SetBool("tokenizer.ggml.add_space_prefix", false);
  }
  if (edit) edit(&md);
  return WriteGguf(path, md, {}, nullptr);
}

StatusOr<std::unique_ptr<Tokenizer>> ReadGguf(const std::string& path) {
  G4_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> f, GgufFile::Open(path));
  return TokenizerFromGguf(*f);
}

class SpmTinyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(WriteSpmGguf(vocab_, dir_.File("tiny.gguf")).ok());
    auto t = ReadGguf(dir_.File("tiny.gguf"));
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    tok_ = std::move(t).value();
  }
  std::vector<int32_t> Ids(std::string_view text, bool parse_special = true) const {
    return tok_->Encode(text, EncodeOptions{parse_special, false});
  }
  std::string Text(const std::vector<int32_t>& ids, bool skip_special = false) const {
    auto s = tok_->Decode(ids, DecodeOptions{skip_special});
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? *s : "";
  }

  ScopedTempDir dir_;
  SpmVocab vocab_ = TinyVocab();
  std::unique_ptr<Tokenizer> tok_;
};

TEST_F(SpmTinyTest, TheHighestScoringPairMergesFirstWhereverItIs) {
  EXPECT_EQ(Ids("abc"), (std::vector<int32_t>{kAb, kC}));      // ab (-2) before bc (-3)
  EXPECT_EQ(Ids("bcd"), (std::vector<int32_t>{kB, kCd}));      // cd (-1), though bc is leftmost
  EXPECT_EQ(Ids("abcd"), (std::vector<int32_t>{kAb, kCd}));
  EXPECT_EQ(Ids(" ab"), (std::vector<int32_t>{kSpaceAb}));      // ab, then ▁ + ab = ▁ab
  EXPECT_EQ(Ids(" a"), (std::vector<int32_t>{kSpaceA}));
  EXPECT_EQ(Ids("é日"), (std::vector<int32_t>{kEJi}));
}

TEST_F(SpmTinyTest, EqualScoresOfDifferentPiecesGoByHuggingFacesOrder) {
  // "xy" and "yx" both score -7. Hugging Face's merge list (and so tokenizer.json and g4) ranks
  // equal scores by the longer left part, the longer right part, then the lower id: "yx" first.
  // SentencePiece and llama.cpp take the leftmost pair instead ([xy][x]); Gemma's vocabulary has
  // no two normal pieces with equal scores, so only hand-made vocabularies can tell them apart.
  EXPECT_EQ(Ids("xyx"), (std::vector<int32_t>{kX, kYx}));
  tokenizer_test::SpmReference spm(vocab_.SentencePieceSpelling(), vocab_.scores, vocab_.types);
  EXPECT_EQ(spm.Encode("xyx", true), (std::vector<int32_t>{kXy, kX}));
}

TEST(SpmMergesTest, OrderIsScoreThenLongerLeftThenLongerRightThenId) {
  const std::vector<std::string_view> pieces = {"a",  "b",  "c",   "ab",  "bc", "abc",
                                                "cc", "é", "日", "é日", "<x>", "ab"};
  const std::vector<float> scores = {-9, -9, -9, -3, -2, -1, -2, -9, -9, -4, 0, -3};
  // "<x>" is not mergeable (a control token); the first "ab" (id 3) is an earlier duplicate.
  const std::vector<uint8_t> mergeable = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1};
  const MergeList m = DeriveSpmMerges(pieces, scores, mergeable);
  using P = std::pair<std::string_view, std::string_view>;
  EXPECT_THAT(m, ElementsAre(P{"ab", "c"}, P{"a", "bc"},   // abc (-1): the longer left part first
                             P{"b", "c"}, P{"c", "c"},     // -2: equal lengths, lower id first
                             P{"a", "b"},                  // ab (-3), once, from its later id
                             P{"é", "日"}));               // split between characters only
}

TEST_F(SpmTinyTest, BytesFallBackAndInvalidUtf8SurvivesTheRoundTrip) {
  EXPECT_EQ(Ids("q"), (std::vector<int32_t>{ByteId('q')}));
  EXPECT_EQ(Ids("\xC3\xBC"), (std::vector<int32_t>{ByteId(0xC3), ByteId(0xBC)}));  // ü
  EXPECT_EQ(Ids("a\xFF" "b"), (std::vector<int32_t>{kA, ByteId(0xFF), kB}));
  EXPECT_EQ(Ids("\xE6\x97"), (std::vector<int32_t>{ByteId(0xE6), ByteId(0x97)}));  // cut 日
  for (const char* s : {"q", "\xC3\xBC", "a\xFF" "b", "\xE6\x97", "x \xF0\x9F\x98\x80 y"}) {
    EXPECT_EQ(Text(Ids(s)), s);
  }
}

TEST_F(SpmTinyTest, WhitespaceRunsAreSpelledWithU2581AndOutrankNormalMerges) {
  // The converter wrote ids 9, 10 as "  ", "   "; SentencePiece has "▁▁", "▁▁▁", and their merges
  // come before every normal one, so "  b" is ▁▁ + b rather than ▁ + ▁b (-6).
  EXPECT_EQ(tok_->Piece(kTwoSpaces), "\xE2\x96\x81\xE2\x96\x81");
  EXPECT_EQ(tok_->Piece(kThreeSpaces), "\xE2\x96\x81\xE2\x96\x81\xE2\x96\x81");
  EXPECT_EQ(Ids("a  b"), (std::vector<int32_t>{kA, kTwoSpaces, kB}));
  EXPECT_EQ(Ids("a   b"), (std::vector<int32_t>{kA, kThreeSpaces, kB}));
  EXPECT_EQ(Ids("a    b"), (std::vector<int32_t>{kA, kThreeSpaces, kSpaceB}));
  EXPECT_EQ(Ids(" b"), (std::vector<int32_t>{kSpaceB}));
  EXPECT_EQ(Text({kA, kTwoSpaces, kB}), "a  b");
  // Text that spells U+2581 itself is a space to SentencePiece and Hugging Face. (llama.cpp,
  // which matches the space-spelled runs in the raw text only, gives [a, ▁, ▁, ▁b] here.)
  EXPECT_EQ(Ids("a \xE2\x96\x81 b"), (std::vector<int32_t>{kA, kThreeSpaces, kB}));
  EXPECT_EQ(Ids("\xE2\x96\x81\xE2\x96\x81"), (std::vector<int32_t>{kTwoSpaces}));
}

TEST_F(SpmTinyTest, UserDefinedTokensAreAlwaysWholeAndControlTokensOnlyWhenParsed) {
  EXPECT_EQ(Ids("\n\n\n"), (std::vector<int32_t>{kNewline2, kNewline}));
  for (const bool parse : {true, false}) {
    EXPECT_EQ(Ids("a<b>b", parse), (std::vector<int32_t>{kA, kTag, kB})) << parse;
  }
  EXPECT_EQ(Ids("<start_of_turn>a<end_of_turn>\n"), (std::vector<int32_t>{4, kA, 5, kNewline}));
  const std::vector<int32_t> plain = Ids("<end_of_turn>", false);
  EXPECT_THAT(plain, ::testing::Not(::testing::Contains(5)));
  EXPECT_EQ(Text(plain), "<end_of_turn>");
  EXPECT_EQ(Ids("<unused0>"), (std::vector<int32_t>{6}));
  EXPECT_EQ(Ids("<pad><unk>"), (std::vector<int32_t>{0, 3}));

  EXPECT_EQ(tok_->Kind(5), TokenKind::kSpecial);
  EXPECT_EQ(tok_->Kind(3), TokenKind::kSpecial);  // unknown
  EXPECT_EQ(tok_->Kind(kTag), TokenKind::kAdded);
  EXPECT_EQ(tok_->Kind(kTwoSpaces), TokenKind::kAdded);
  EXPECT_EQ(tok_->Kind(ByteId('A')), TokenKind::kByte);
  EXPECT_EQ(tok_->Kind(kAb), TokenKind::kNormal);
  EXPECT_EQ(Text({2, 4, kA, 5, kNewline, kTag}, /*skip_special=*/true), "a\n<b>");
}

TEST_F(SpmTinyTest, SpecialIdsComeFromTheKeys) {
  const SpecialTokenIds& s = tok_->special_ids();
  EXPECT_EQ(s.bos, 2);
  EXPECT_EQ(s.eos, 1);
  EXPECT_EQ(s.pad, 0);
  EXPECT_EQ(s.unk, 3);
  EXPECT_TRUE(s.add_bos_token);
  EXPECT_THAT(s.stop_ids, ElementsAre(1, 5));  // EOS and <end_of_turn>
  EXPECT_EQ(tok_->Encode("ab", EncodeOptions{true, true}), (std::vector<int32_t>{2, kAb}));

  // An instruction-tuned file may name <end_of_turn> its EOS: <eos> still stops.
  ASSERT_TRUE(WriteSpmGguf(
                  vocab_, dir_.File("it.gguf"),
                  [](GgufMetadata* m) {
                    m->SetU32("tokenizer.ggml.eos_token_id", 5);
                    m->SetBool("tokenizer.ggml.add_bos_token", false);
                  },
                  {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.add_bos_token"})
                  .ok());
  auto it = ReadGguf(dir_.File("it.gguf"));
  ASSERT_TRUE(it.ok()) << it.status().ToString();
  EXPECT_EQ((*it)->special_ids().eos, 5);
  EXPECT_FALSE((*it)->special_ids().add_bos_token);
  EXPECT_THAT((*it)->special_ids().stop_ids, ElementsAre(1, 5));
}

// Random mixes of the tiny vocabulary's characters and tokens (never "x" next to "y": the tie
// above is where SentencePiece and Hugging Face part).
TEST_F(SpmTinyTest, AgreesWithANaiveSentencePieceEncoder) {
  tokenizer_test::SpmReference spm(vocab_.SentencePieceSpelling(), vocab_.scores, vocab_.types);
  const std::vector<std::string> fragments = {
      "a", "b", "c", "d", "ab", "cd", " ", "  ", "   ", "     ", "é", "日", "é日", "\n", "\n\n\n",
      "<b>", "<end_of_turn>", "<start_of_turn>", "<unused0>", "\xE2\x96\x81", "q", "\xC3\xBC",
      "\xFF", "\xE6\x97", "x", "<", ">", "<pad>"};
  std::mt19937 rng(5);
  int checked = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string s;
    const int parts = 1 + static_cast<int>(rng() % 10);
    for (int p = 0; p < parts; ++p) s += fragments[rng() % fragments.size()];
    if (s.find("\xE2\x96\x81") != std::string::npos) {
      // Text spelling "▁▁" itself: Hugging Face (and g4, for tokenizer.json parity) match that
      // added token in the raw text, SentencePiece only sees the normalized run: "   ▁▁  " is
      // [▁▁▁][▁▁][▁▁] here and [▁▁▁][▁▁▁][▁] there. Tested against tokenizer.json instead.
      continue;
    }
    for (const bool parse : {true, false}) {
      ASSERT_EQ(Ids(s, parse), spm.Encode(s, parse)) << "'" << s << "' parse_special=" << parse;
      ++checked;
    }
    ASSERT_EQ(Text(Ids(s)), s);
    ASSERT_EQ(Text(Ids(s, false)), s);
  }
  EXPECT_GT(checked, 4000);
}

// A valid small vocabulary with one key changed; returns TokenizerFromGguf's status.
Status ReadWithEdit(const std::string& path, const std::function<void(GgufMetadata*)>& edit,
                    const std::vector<std::string>& skip = {}) {
  SpmVocab v;
  v.Add("<pad>", -1000, kControl);
  v.Add("<eos>", -1000, kControl);
  v.Add("<bos>", -1000, kControl);
  v.Add("a", -2, kNormal);
  v.Add("b", -3, kNormal);
  v.Add("ab", -1, kNormal);
  G4_RETURN_IF_ERROR(WriteSpmGguf(v, path, edit, skip));
  return ReadGguf(path).status();
}

TEST(SpmGgufErrorTest, ProblemsNameTheFileAndTheKey) {
  ScopedTempDir dir;
  const std::string path = dir.File("bad.gguf");
  ASSERT_TRUE(ReadWithEdit(path, nullptr).ok());
  // A llama file's merges key, if any, is not read.
  EXPECT_TRUE(ReadWithEdit(path, [](GgufMetadata* m) {
                const std::vector<std::string> merges = {"not a merge"};
                m->SetStringArray("tokenizer.ggml.merges", merges);
              }).ok());

  for (const char* key : {"tokenizer.ggml.model", "tokenizer.ggml.tokens",
                          "tokenizer.ggml.scores", "tokenizer.ggml.token_type"}) {
    const Status s = ReadWithEdit(path, nullptr, {key});
    EXPECT_EQ(s.code(), StatusCode::kNotFound) << key << ": " << s.ToString();
    EXPECT_THAT(s.message(), HasSubstr(key));
    EXPECT_THAT(s.message(), HasSubstr(path));
  }

  struct Case {
    const char* key;
    std::function<void(GgufMetadata*)> set;
    StatusCode code;
    const char* expect;
  };
  const std::vector<int32_t> ints = {1, 2, 3, 4, 5, 6};
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<Case> cases = {
      {"tokenizer.ggml.model",
       [](GgufMetadata* m) { m->SetString("tokenizer.ggml.model", "rwkv"); },
       StatusCode::kUnimplemented,
       "tokenizer.ggml.model is 'rwkv'; g4 reads the 'gemma4' (BPE with merges) and 'llama'"},
      {"tokenizer.ggml.scores",
       [&](GgufMetadata* m) { m->SetI32Array("tokenizer.ggml.scores", ints); },
       StatusCode::kInvalidArgument, "tokenizer.ggml.scores must be an array of f32, found array"},
      {"tokenizer.ggml.scores",
       [](GgufMetadata* m) {
         const std::vector<float> three = {0, 0, 0};
         m->SetF32Array("tokenizer.ggml.scores", three);
       },
       StatusCode::kInvalidArgument, "tokenizer.ggml.scores has 3 entries for 6 tokens"},
      {"tokenizer.ggml.scores",
       [&](GgufMetadata* m) {
         const std::vector<float> scores = {0, 0, 0, 0, nan, 0};
         m->SetF32Array("tokenizer.ggml.scores", scores);
       },
       StatusCode::kInvalidArgument, "at id 4 (must be finite)"},
      {"tokenizer.ggml.token_type",
       [](GgufMetadata* m) {
         const std::vector<int32_t> five = {3, 3, 3, 1, 1};
         m->SetI32Array("tokenizer.ggml.token_type", five);
       },
       StatusCode::kInvalidArgument, "tokenizer.ggml.token_type has 5 entries for 6 tokens"},
      {"tokenizer.ggml.token_type",
       [](GgufMetadata* m) {
         const std::vector<int32_t> types = {3, 3, 3, 6, 1, 1};
         m->SetI32Array("tokenizer.ggml.token_type", types);
       },
       StatusCode::kInvalidArgument,
       "tokenizer.ggml.token_type types 'a' at id 3 as a byte token, which must be spelled <0xNN>"},
      {"tokenizer.ggml.token_type",
       [](GgufMetadata* m) {
         const std::vector<int32_t> types = {3, 3, 3, 1, 1, 0};
         m->SetI32Array("tokenizer.ggml.token_type", types);
       },
       StatusCode::kInvalidArgument, "tokenizer.ggml.token_type has type 0 at id 5"},
      {"tokenizer.ggml.tokens",
       [](GgufMetadata* m) {
         const std::vector<std::string> tokens = {"<pad>", "", "<bos>", "a", "b", "ab"};
         m->SetStringArray("tokenizer.ggml.tokens", tokens);
       },
       StatusCode::kInvalidArgument,
       "tokenizer.ggml.tokens has an empty control/user-defined token at id 1"},
      {"tokenizer.ggml.add_space_prefix",
       [](GgufMetadata* m) { m->SetBool("tokenizer.ggml.add_space_prefix", true); },
       StatusCode::kUnimplemented, "tokenizer.ggml.add_space_prefix is true"},
      {"tokenizer.ggml.add_space_prefix", nullptr, StatusCode::kUnimplemented,
       "tokenizer.ggml.add_space_prefix is absent (llama.cpp: true)"},
      {"tokenizer.ggml.eos_token_id",
       [](GgufMetadata* m) { m->SetU32("tokenizer.ggml.eos_token_id", 99); },
       StatusCode::kInvalidArgument,
       "tokenizer.ggml.eos_token_id = 99 is outside the vocabulary of 6 tokens"},
      {"tokenizer.ggml.add_bos_token",
       [](GgufMetadata* m) { m->SetString("tokenizer.ggml.add_bos_token", "yes"); },
       StatusCode::kInvalidArgument, "tokenizer.ggml.add_bos_token"},
  };
  for (const Case& c : cases) {
    const Status s = ReadWithEdit(path, c.set, {c.key});
    EXPECT_EQ(s.code(), c.code) << c.key << ": " << s.ToString();
    EXPECT_THAT(s.message(), HasSubstr(c.expect)) << c.key;
    EXPECT_THAT(s.message(), HasSubstr(path)) << c.key;
  }
}

// The chat format of a GGUF: from tokenizer.chat_template when there is one, else by
// architecture (Gemma 3 GGUFs converted from base models carry no template).
TEST(SpmGgufChatStyleTest, TemplateOrArchitectureDecides) {
  ScopedTempDir dir;
  const std::string path = dir.File("chat.gguf");
  auto style_of = [&](const std::function<void(GgufMetadata*)>& edit) -> StatusOr<ChatStyle> {
    GgufMetadata md;
    edit(&md);
    G4_RETURN_IF_ERROR(WriteGguf(path, md, {}, nullptr));
    G4_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> f, GgufFile::Open(path));
    return ChatStyleFromGguf(*f);
  };
  auto s = style_of([](GgufMetadata* m) { m->SetString("general.architecture", "gemma3"); });
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->format, ChatFormat::kNone);
  EXPECT_THAT(s->source, HasSubstr("general.architecture = gemma3"));
  auto r = RenderChat(nlohmann::json::parse(R"([{"role": "user", "content": "Hi"}])"), nullptr,
                      ChatOptions{true, false, *s});
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.status().message(), HasSubstr("no chat template"));
  EXPECT_THAT(r.status().message(), HasSubstr("/v1/completions"));

  s = style_of([](GgufMetadata* m) {
    m->SetString("general.architecture", "gemma3");
    m->SetString("tokenizer.chat_template",
                 "{{ bos_token }}{% for m in messages %}{{ '<start_of_turn>' + m['role'] }}"
                 "{% endfor %}");
  });
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->format, ChatFormat::kGemma3);
  EXPECT_THAT(s->source, HasSubstr("tokenizer.chat_template"));

  s = style_of([](GgufMetadata* m) { m->SetString("general.architecture", "gemma4"); });
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->format, ChatFormat::kGemma4);
  s = style_of([](GgufMetadata* m) { m->SetString("tokenizer.chat_template", "{{ '<|turn>' }}"); });
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->format, ChatFormat::kGemma4);
  s = style_of([](GgufMetadata* m) { m->SetU32("general.architecture", 3); });
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("general.architecture"));
}

}  // namespace
}  // namespace g4
