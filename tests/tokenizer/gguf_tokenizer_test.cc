// Tokenizer from GGUF metadata: tokenizer.json -> GGUF (AddGgufTokenizerMetadata + WriteGguf) ->
// TokenizerFromGguf must give the tokenizer tokenizer.json gives (same pieces, kinds, special
// ids, and ids for thousands of varied strings, on a small vocabulary and on Gemma 4's real one),
// and malformed metadata must fail naming the key.
#include "tokenizer/gguf_vocab.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "chat/model_tokenizer.h"
#include "tokenizer/gemma4_vocab.h"
#include "tokenizer/test_util.h"

namespace g4 {
namespace {

using ::testing::HasSubstr;
using tokenizer_test::ScopedTempDir;

// Writes `json`'s tokenizer as a tensor-less GGUF at `path` (plus `extra` keys).
Status WriteTokenizerGguf(const TokenizerJson& json, const std::string& path,
                          const GgufTokenizerOptions& options = {},
                          const std::function<void(GgufMetadata*)>& extra = nullptr) {
  GgufMetadata md;
  md.SetString("general.architecture", "gemma4");
  G4_RETURN_IF_ERROR(AddGgufTokenizerMetadata(json, options, &md));
  if (extra) extra(&md);
  return WriteGguf(path, md, {}, nullptr);
}

StatusOr<std::unique_ptr<Tokenizer>> ReadTokenizerGguf(const std::string& path) {
  G4_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> f, GgufFile::Open(path));
  return TokenizerFromGguf(*f);
}

// Random strings from `fragments`, random code points and random bytes (invalid UTF-8 too).
std::vector<std::string> VariedStrings(const std::vector<std::string>& fragments, int count,
                                       uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::string> out;
  for (int i = 0; i < count; ++i) {
    std::string s;
    const int parts = 1 + static_cast<int>(rng() % 12);
    for (int p = 0; p < parts; ++p) {
      switch (rng() % 6) {
        case 0: case 1: case 2:
          s += fragments[rng() % fragments.size()];
          break;
        case 3:
          s += std::string(1 + rng() % 3, " \n\t"[rng() % 3]);
          break;
        case 4: {  // a code point from a few scripts (2-4 byte UTF-8)
          static const uint32_t kBase[] = {0xE9, 0x3B1, 0x430, 0x4E00, 0xAC00, 0x1F600, 0x2581};
          uint32_t cp = kBase[rng() % 7] + (rng() % 40);
          if (cp >= 0x2581 && cp < 0x2600) cp = 0x2581;
          if (cp < 0x800) {
            s += static_cast<char>(0xC0 | (cp >> 6));
            s += static_cast<char>(0x80 | (cp & 63));
          } else if (cp < 0x10000) {
            s += static_cast<char>(0xE0 | (cp >> 12));
            s += static_cast<char>(0x80 | ((cp >> 6) & 63));
            s += static_cast<char>(0x80 | (cp & 63));
          } else {
            s += static_cast<char>(0xF0 | (cp >> 18));
            s += static_cast<char>(0x80 | ((cp >> 12) & 63));
            s += static_cast<char>(0x80 | ((cp >> 6) & 63));
            s += static_cast<char>(0x80 | (cp & 63));
          }
          break;
        }
        default:
          s += static_cast<char>(rng() % 256);
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

// Same vocabulary, kinds, special ids, and ids / decoded text for every string.
void ExpectSameTokenizer(const Tokenizer& a, const Tokenizer& b,
                         const std::vector<std::string>& texts) {
  ASSERT_EQ(a.vocab_size(), b.vocab_size());
  for (int32_t id = 0; id < a.vocab_size(); ++id) {
    ASSERT_EQ(a.HasId(id), b.HasId(id)) << id;
    if (!a.HasId(id)) continue;
    ASSERT_EQ(a.Piece(id), b.Piece(id)) << id;
    ASSERT_EQ(a.Kind(id), b.Kind(id)) << id << " '" << a.Piece(id) << "'";
  }
  EXPECT_EQ(a.special_ids().bos, b.special_ids().bos);
  EXPECT_EQ(a.special_ids().eos, b.special_ids().eos);
  EXPECT_EQ(a.special_ids().pad, b.special_ids().pad);
  EXPECT_EQ(a.special_ids().unk, b.special_ids().unk);
  EXPECT_EQ(a.special_ids().stop_ids, b.special_ids().stop_ids);
  int mismatches = 0;
  for (const std::string& t : texts) {
    for (const bool parse_special : {true, false}) {
      const EncodeOptions eo{parse_special, false};
      const std::vector<int32_t> ia = a.Encode(t, eo), ib = b.Encode(t, eo);
      if (ia != ib && ++mismatches <= 5) ADD_FAILURE() << "ids differ for '" << t << "'";
      auto da = a.Decode(ia), db = b.Decode(ib);
      ASSERT_TRUE(da.ok() && db.ok());
      EXPECT_EQ(*da, *db);
      if (t.find("\xE2\x96\x81") == std::string::npos) {  // "▁" decodes to " "
        EXPECT_EQ(*db, t);
      }
    }
  }
  EXPECT_EQ(mismatches, 0);
}

const std::vector<std::string>& SmallPieces() {
  static const std::vector<std::string> p = {
      "▁", "a", "b", "c", "ab", "bc", "▁a", "▁ab", "abc", "▁abc", "\n", "\n\n", "<bos>", "<eos>",
      "<pad>", "<unk>", "<mask>", "<|turn>", "<turn|>", "<|channel>", "x▁y"};
  return p;
}

std::unique_ptr<TokenizerJson> SmallJson() {
  const std::string text = tokenizer_test::MakeTokenizerJson(
      SmallPieces(), {{"a", "b"}, {"b", "c"}, {"▁", "a"}, {"▁a", "b"}, {"ab", "c"}, {"▁ab", "c"}},
      {{"<bos>", true}, {"<eos>", true}, {"<pad>", true}, {"<unk>", true}, {"<mask>", false},
       {"<|turn>", true}, {"<turn|>", true}, {"<|channel>", true}, {"\n\n", false}});
  auto j = ParseTokenizerJson(text, "small.json");
  EXPECT_TRUE(j.ok()) << j.status().ToString();
  return j.ok() ? std::move(j).value() : nullptr;
}

TEST(GgufTokenizerTest, SmallVocabularyRoundTrips) {
  ScopedTempDir dir;
  std::unique_ptr<TokenizerJson> json = SmallJson();
  ASSERT_NE(json, nullptr);
  auto from_json = Tokenizer::FromJson(*json, "small.json");
  ASSERT_TRUE(from_json.ok()) << from_json.status().ToString();
  const std::string path = dir.File("small.gguf");
  ASSERT_TRUE(WriteTokenizerGguf(*json, path).ok());
  auto from_gguf = ReadTokenizerGguf(path);
  ASSERT_TRUE(from_gguf.ok()) << from_gguf.status().ToString();
  const std::vector<std::string> fragments = {"a", "b", "c", "abc", " ab", "x y", "<bos>",
                                              "<|turn>", "<turn|>", "<|channel>", "<mask>",
                                              "\n\n", "<eos", "ç"};
  ExpectSameTokenizer(**from_json, **from_gguf, VariedStrings(fragments, 2000, 7));
  const Tokenizer& t = **from_gguf;
  EXPECT_EQ(t.Kind(t.TokenId("<|turn>")), TokenKind::kSpecial);
  EXPECT_EQ(t.Kind(t.TokenId("<|channel>")), TokenKind::kSpecialAsText);
  EXPECT_EQ(t.Kind(t.TokenId("<mask>")), TokenKind::kAdded);
  EXPECT_EQ(t.Kind(t.TokenId("<0x41>")), TokenKind::kByte);
  EXPECT_EQ(t.special_ids().bos, t.TokenId("<bos>"));
  EXPECT_TRUE(t.special_ids().add_bos_token);
}

TEST(GgufTokenizerTest, FileIdsOverrideNamesAndUserDefinedControlNamesAreSpecial) {
  ScopedTempDir dir;
  // A hand-written file: <|channel> typed user-defined (as llama.cpp's converter does) is still
  // special-as-text; eos_token_id 5 (<turn|>) wins over the name <eos>.
  GgufMetadata md;
  const std::vector<std::string> tokens = {"<pad>", "<eos>", "<bos>", "<unk>", "<|channel>",
                                           "<turn|>", "▁", "a", "▁a", "<0x62>"};
  const std::vector<int32_t> types = {3, 3, 3, 2, 4, 3, 1, 1, 1, 6};
  const std::vector<std::string> merges = {"▁ a"};
  md.SetString("tokenizer.ggml.model", "gemma4");
  md.SetStringArray("tokenizer.ggml.tokens", tokens);
  md.SetI32Array("tokenizer.ggml.token_type", types);
  md.SetStringArray("tokenizer.ggml.merges", merges);
  md.SetU32("tokenizer.ggml.eos_token_id", 5);
  md.SetBool("tokenizer.ggml.add_bos_token", false);
  const std::string path = dir.File("hand.gguf");
  ASSERT_TRUE(WriteGguf(path, md, {}, nullptr).ok());
  auto t = ReadTokenizerGguf(path);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ((*t)->Kind(4), TokenKind::kSpecialAsText);
  EXPECT_EQ((*t)->Kind(3), TokenKind::kSpecial);
  EXPECT_EQ((*t)->Kind(9), TokenKind::kByte);
  EXPECT_EQ((*t)->special_ids().eos, 5);
  EXPECT_EQ((*t)->special_ids().bos, 2);
  EXPECT_FALSE((*t)->special_ids().add_bos_token);
  EXPECT_THAT((*t)->special_ids().stop_ids, ::testing::ElementsAre(1, 5));
  EXPECT_EQ((*t)->Encode(" a a<|channel>b"), (std::vector<int32_t>{8, 8, 4, 9}));
  const std::vector<int32_t> ids = {8, 4, 9};
  EXPECT_EQ(*(*t)->Decode(ids), " a<|channel>b");
}

// A valid tokenizer's keys with one changed by `edit`; returns TokenizerFromGguf's status.
Status ReadWithEdit(const std::string& path, const std::function<void(GgufMetadata*)>& edit,
                    const std::vector<std::string>& skip = {}) {
  const std::vector<std::string> tokens = {"<pad>", "<eos>", "<bos>", "a", "b", "ab"};
  const std::vector<int32_t> types = {3, 3, 3, 1, 1, 1};
  const std::vector<std::string> merges = {"a b"};
  auto skipped = [&](const char* k) {
    return std::find(skip.begin(), skip.end(), k) != skip.end();
  };
  GgufMetadata md;
  if (!skipped("tokenizer.ggml.model")) md.SetString("tokenizer.ggml.model", "gemma4");
  if (!skipped("tokenizer.ggml.tokens")) md.SetStringArray("tokenizer.ggml.tokens", tokens);
  if (!skipped("tokenizer.ggml.token_type")) md.SetI32Array("tokenizer.ggml.token_type", types);
  if (!skipped("tokenizer.ggml.merges")) md.SetStringArray("tokenizer.ggml.merges", merges);
  if (edit) edit(&md);
  G4_RETURN_IF_ERROR(WriteGguf(path, md, {}, nullptr));
  return ReadTokenizerGguf(path).status();
}

TEST(GgufTokenizerTest, MissingOrIllTypedKeysAreNamed) {
  ScopedTempDir dir;
  const std::string path = dir.File("bad.gguf");
  EXPECT_TRUE(ReadWithEdit(path, nullptr).ok());
  for (const char* key : {"tokenizer.ggml.model", "tokenizer.ggml.tokens",
                          "tokenizer.ggml.token_type", "tokenizer.ggml.merges"}) {
    const Status s = ReadWithEdit(path, nullptr, {key});
    EXPECT_EQ(s.code(), StatusCode::kNotFound) << key << ": " << s.ToString();
    EXPECT_THAT(s.message(), HasSubstr(key));
    EXPECT_THAT(s.message(), HasSubstr(path));
  }
  struct Case {
    const char* key;
    std::function<void(GgufMetadata*)> set;
    const char* expect;
  };
  const std::vector<int32_t> ints = {1, 2, 3, 4, 5, 6};
  const std::vector<std::string> six = {"a", "b", "c", "d", "e", "f"};
  const std::vector<Case> cases = {
      {"tokenizer.ggml.model", [](GgufMetadata* m) { m->SetU32("tokenizer.ggml.model", 1); },
       "tokenizer.ggml.model"},
      {"tokenizer.ggml.tokens",
       [&](GgufMetadata* m) { m->SetI32Array("tokenizer.ggml.tokens", ints); },
       "must be an array of string, found array of i32"},
      {"tokenizer.ggml.token_type",
       [&](GgufMetadata* m) { m->SetStringArray("tokenizer.ggml.token_type", six); },
       "tokenizer.ggml.token_type must be an array of i32"},
      {"tokenizer.ggml.merges",
       [](GgufMetadata* m) { m->SetString("tokenizer.ggml.merges", "a b"); },
       "must be an array of string, found string"},
  };
  for (const Case& c : cases) {
    const Status s = ReadWithEdit(path, c.set, {c.key});
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.key << ": " << s.ToString();
    EXPECT_THAT(s.message(), HasSubstr(c.expect)) << c.key;
  }
  Status s = ReadWithEdit(path, [](GgufMetadata* m) {
    m->SetU32("tokenizer.ggml.bos_token_id", 6);
  });
  EXPECT_THAT(s.message(), HasSubstr("tokenizer.ggml.bos_token_id = 6 is outside the vocabulary"));
  s = ReadWithEdit(path, [](GgufMetadata* m) {
    m->SetString("tokenizer.ggml.add_bos_token", "yes");
  });
  EXPECT_THAT(s.message(), HasSubstr("tokenizer.ggml.add_bos_token"));
  s = ReadWithEdit(
      path,
      [](GgufMetadata* m) {
        const std::vector<std::string> merges = {"a b", "ab"};
        m->SetStringArray("tokenizer.ggml.merges", merges);
      },
      {"tokenizer.ggml.merges"});
  EXPECT_THAT(s.message(), HasSubstr("tokenizer.ggml.merges entry 1 'ab' is not \"left right\""));
  s = ReadWithEdit(
      path,
      [](GgufMetadata* m) {
        const std::vector<int32_t> types = {3, 3, 3, 1, 1};
        m->SetI32Array("tokenizer.ggml.token_type", types);
      },
      {"tokenizer.ggml.token_type"});
  EXPECT_THAT(s.message(), HasSubstr("tokenizer.ggml.token_type has 5 entries for 6 tokens"));
  s = ReadWithEdit(
      path,
      [](GgufMetadata* m) {
        const std::vector<int32_t> types = {3, 3, 3, 1, 1, 9};
        m->SetI32Array("tokenizer.ggml.token_type", types);
      },
      {"tokenizer.ggml.token_type"});
  EXPECT_THAT(s.message(), HasSubstr("type 9 at id 5"));
  s = ReadWithEdit(
      path, [](GgufMetadata* m) { m->SetString("tokenizer.ggml.model", "t5"); },
      {"tokenizer.ggml.model"});
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_THAT(s.message(), HasSubstr("tokenizer.ggml.model is 't5'"));
  // "llama" (SentencePiece) is read too, and needs scores (gguf_spm_tokenizer_test.cc).
  s = ReadWithEdit(
      path, [](GgufMetadata* m) { m->SetString("tokenizer.ggml.model", "llama"); },
      {"tokenizer.ggml.model"});
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr("tokenizer.ggml.scores is missing"));
  // A merge whose side is not a piece is the BPE builder's error, with the file named.
  s = ReadWithEdit(
      path,
      [](GgufMetadata* m) {
        const std::vector<std::string> merges = {"a zz"};
        m->SetStringArray("tokenizer.ggml.merges", merges);
      },
      {"tokenizer.ggml.merges"});
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr(path));
}

TEST(GgufTokenizerTest, ChatStyleComesFromTheTemplateOrThePleWidth) {
  ScopedTempDir dir;
  std::unique_ptr<TokenizerJson> json = SmallJson();
  ASSERT_NE(json, nullptr);
  const std::string large = dir.File("large.gguf"), plain = dir.File("plain.gguf");
  ASSERT_TRUE(WriteTokenizerGguf(*json, large, {true, Gemma4ChatTemplate(true)}).ok());
  ASSERT_TRUE(WriteTokenizerGguf(*json, plain, {true, ""}, [](GgufMetadata* m) {
                m->SetU32("gemma4.embedding_length_per_layer_input", 0);
              }).ok());
  auto m = LoadModelTokenizer(large);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_TRUE(m->chat_style.empty_thought_in_generation_prompt);
  EXPECT_THAT(m->chat_style.source, HasSubstr("tokenizer.chat_template"));
  EXPECT_EQ(m->tokenizer->vocab_size(), 256 + static_cast<int>(SmallPieces().size()));
  m = LoadModelTokenizer(plain);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_TRUE(m->chat_style.empty_thought_in_generation_prompt);
  EXPECT_THAT(m->chat_style.source, HasSubstr("26B/31B"));
  EXPECT_TRUE(IsGgufModelPath(plain));
  EXPECT_FALSE(IsGgufModelPath(dir.path()));
}

TEST(GgufTokenizerTest, WriterRejectsWhatGgufCannotHold) {
  GgufMetadata md;
  auto j = ParseTokenizerJson(tokenizer_test::MakeTokenizerJson({"a b"}, {}), "sp.json");
  ASSERT_TRUE(j.ok());
  (*j)->merges.emplace_back("a", "a b");
  EXPECT_THAT(AddGgufTokenizerMetadata(**j, {}, &md).message(), HasSubstr("contains a space"));
  (*j)->merges.clear();
  (*j)->normalizer.clear();
  EXPECT_THAT(AddGgufTokenizerMetadata(**j, {}, &md).message(), HasSubstr("normalizer"));
}

TEST(GgufTokenizerTest, Gemma4VocabularyMatchesTokenizerJson) {
  G4_REQUIRE_NPM_TOKENIZER();
  ScopedTempDir dir;
  auto src = ReadTokenizerJson(tokenizer_test::NpmGemmaTokenizerJson());
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  auto files = MakeGemma4TokenizerFiles(**src, /*large_model_template=*/false);
  ASSERT_TRUE(files.ok()) << files.status().ToString();
  auto json = ParseTokenizerJson(files->tokenizer_json, "gemma4 tokenizer.json");
  ASSERT_TRUE(json.ok()) << json.status().ToString();
  auto from_json = Tokenizer::FromJson(**json, "gemma4 tokenizer.json");
  ASSERT_TRUE(from_json.ok()) << from_json.status().ToString();
  const std::string path = dir.File("gemma4.gguf");
  ASSERT_TRUE(WriteTokenizerGguf(**json, path, {true, files->chat_template_jinja}).ok());
  auto m = LoadModelTokenizer(path);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const Tokenizer& t = *m->tokenizer;
  EXPECT_EQ(t.vocab_size(), 262144);
  EXPECT_EQ(t.special_ids().bos, 2);
  EXPECT_EQ(t.special_ids().eos, 1);
  EXPECT_THAT(t.special_ids().stop_ids, ::testing::ElementsAre(1, 50, 106));
  EXPECT_FALSE(m->chat_style.empty_thought_in_generation_prompt);
  const std::vector<std::string> fragments = {
      "Hello", " world", "The quick brown fox", " jumps over the lazy dog.", "<bos>", "<|turn>",
      "user\n", "<turn|>", "<|channel>thought\n<channel|>", "<|tool_call>call:f{x:1}<tool_call|>",
      "<|\"|>", "<start_of_image>", "<unused3>", "<mask>", "def f(x):\n    return x + 1\n",
      "    ", "\n\n\n", "1234567890", "3.14159", "naïve café", "Привет мир", "你好，世界",
      "こんにちは", "안녕하세요", "🙂👍🏽", "https://example.com/a?b=c", "<b>bold</b>", ">▁</",
      "tab\there", "\r\n", "ÆØÅ", "{\"key\": [1, 2]}", "<|think|>", "<pad>", "<eos>"};
  // Strings: the formats.md sample sentence, then 3000 random mixes.
  std::vector<std::string> texts = {"<bos><|turn>user\nWhat is 2+2?<turn|>\n<|turn>model\n"};
  for (std::string& s : VariedStrings(fragments, 3000, 42)) texts.push_back(std::move(s));
  ExpectSameTokenizer(**from_json, t, texts);
  EXPECT_EQ(t.Encode("<bos><|turn>user\nWhat is 2+2?<turn|>\n<|turn>model\n"),
            (std::vector<int32_t>{2, 105, 2364, 107, 3689, 563, 236743, 236778, 236862, 236778,
                                  236881, 106, 107, 105, 4368, 107}));
}

}  // namespace
}  // namespace g4
