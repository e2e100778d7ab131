// Random walks through the token masks (fixed seeds): pick an allowed token, accept it, repeat
// until an end id. What comes out must parse (JSON, or Gemma tool syntax via
// tool_syntax::ParseValue) and satisfy the schema, checked by a small independent validator.
#include <gtest/gtest.h>

#include <random>

#include "chat/tool_syntax.h"
#include "runtime/grammar/grammar.h"
#include "runtime/grammar/grammar_test_util.h"
#include "runtime/grammar/vocab_test_util.h"
#include "tokenizer/utf8.h"

namespace g4::grammar {
namespace {

using nlohmann::json;

const json* Resolve(const json& root, const std::string& ref) {
  if (ref == "#") return &root;
  for (const std::string p : {"#/$defs/", "#/definitions/"}) {
    if (ref.compare(0, p.size(), p) == 0) {
      return &root[p.substr(2, p.size() - 3)][ref.substr(p.size())];
    }
  }
  return nullptr;
}

bool Valid(const json& v, const json& s, const json& root);

bool TypeOk(const json& v, const std::string& t, const json& s, const json& root) {
  if (t == "null") return v.is_null();
  if (t == "boolean") return v.is_boolean();
  if (t == "number") return v.is_number();
  if (t == "integer") {
    if (!v.is_number_integer()) return false;
    const int64_t x = v.get<int64_t>();
    if (s.contains("minimum") && x < s["minimum"].get<double>()) return false;
    if (s.contains("maximum") && x > s["maximum"].get<double>()) return false;
    if (s.contains("exclusiveMinimum") && x <= s["exclusiveMinimum"].get<double>()) return false;
    if (s.contains("exclusiveMaximum") && x >= s["exclusiveMaximum"].get<double>()) return false;
    return true;
  }
  if (t == "string") {
    if (!v.is_string() || !utf8::IsValid(v.get<std::string>())) return false;
    int64_t cps = 0;
    for (unsigned char c : v.get<std::string>()) cps += (c & 0xC0) != 0x80;
    return cps >= s.value("minLength", int64_t{0}) && cps <= s.value("maxLength", INT64_MAX);
  }
  if (t == "array") {
    if (!v.is_array()) return false;
    if (static_cast<int64_t>(v.size()) < s.value("minItems", int64_t{0})) return false;
    if (static_cast<int64_t>(v.size()) > s.value("maxItems", INT64_MAX)) return false;
    for (const json& e : v) {
      if (s.contains("items") && !Valid(e, s["items"], root)) return false;
    }
    return true;
  }
  if (t == "object") {
    if (!v.is_object()) return false;
    for (const json& r : s.value("required", json::array())) {
      if (!v.contains(r.get<std::string>())) return false;
    }
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (s.contains("properties") && s["properties"].contains(it.key())) {
        if (!Valid(*it, s["properties"][it.key()], root)) return false;
      } else if (s.contains("additionalProperties")) {
        if (!Valid(*it, s["additionalProperties"], root)) return false;
      }
    }
    return true;
  }
  return false;
}

bool Valid(const json& v, const json& s, const json& root) {
  if (s.is_boolean()) return s.get<bool>();
  if (s.value("nullable", false) && v.is_null()) return true;
  if (s.contains("$ref")) return Valid(v, *Resolve(root, s["$ref"].get<std::string>()), root);
  for (const char* k : {"anyOf", "oneOf"}) {
    if (!s.contains(k)) continue;
    for (const json& alt : s[k]) {
      if (Valid(v, alt, root)) return true;
    }
    return false;
  }
  if (s.contains("enum")) {
    for (const json& e : s["enum"]) {
      if (e == v) return true;
    }
    return false;
  }
  if (s.contains("const")) return s["const"] == v;
  if (!s.contains("type")) {
    if (s.contains("properties")) return TypeOk(v, "object", s, root);
    return true;
  }
  if (s["type"].is_string()) return TypeOk(v, s["type"].get<std::string>(), s, root);
  for (const json& t : s["type"]) {
    if (TypeOk(v, t.get<std::string>(), s, root)) return true;
  }
  return false;
}

// Walks from a fresh matcher; returns the text (control symbols spelled out), or "" on failure.
std::string Walk(const std::shared_ptr<const Grammar>& g, const Tokenizer& tok,
                 const std::shared_ptr<const VocabIndex>& vocab, int32_t eos, uint32_t seed) {
  // Tokens with a control symbol (1) or something that ends a JSON value (2) are preferred,
  // so that walks finish.
  static std::map<const Tokenizer*, std::vector<uint8_t>> closers;
  std::vector<uint8_t>& closer = closers[&tok];
  if (closer.empty()) {
    closer.assign(tok.vocab_size(), 0);
    for (int32_t id = 0; id < tok.vocab_size(); ++id) {
      for (int s : test::TokenSymbols(tok, id)) {
        if (s == kSymQuote || s == kSymToolCallEnd) closer[id] = 1;
        if (closer[id] == 0 && (s == '"' || s == '}' || s == ']')) closer[id] = 2;
      }
    }
  }
  std::mt19937 rng(seed);
  GrammarMatcher m(g, vocab, {eos});
  std::vector<uint8_t> mask(tok.vocab_size());
  std::string text;
  for (int step = 0; step < 4000; ++step) {
    m.FillMask(mask);
    std::vector<int32_t> all, control, close;
    for (int32_t id = 0; id < tok.vocab_size(); ++id) {
      if (!mask[id] || id == eos) continue;
      all.push_back(id);
      if (closer[id] == 1) control.push_back(id);
      if (closer[id] == 2) close.push_back(id);
    }
    if (mask[eos] && (all.empty() || rng() % 4 != 0)) {
      EXPECT_TRUE(m.Accept(eos));
      return text;
    }
    if (all.empty()) {
      ADD_FAILURE() << "dead end after '" << text << "'";
      return "";
    }
    const uint32_t r = rng() % 3;
    const std::vector<int32_t>& from = !control.empty() && r == 0 ? control
                                       : !close.empty() && r == 1 ? close
                                                                  : all;
    const int32_t id = from[rng() % from.size()];
    if (!m.Accept(id)) {
      ADD_FAILURE() << "allowed token " << id << " rejected after '" << text << "'";
      return "";
    }
    for (int s : test::TokenSymbols(tok, id)) {
      text += s == kSymQuote           ? "<|\"|>"
              : s == kSymToolCallStart ? "<|tool_call>"
              : s == kSymToolCallEnd   ? "<tool_call|>"
                                       : std::string(1, static_cast<char>(s));
    }
  }
  ADD_FAILURE() << "no end after 4000 steps: '" << text << "'";
  return "";
}

const char* kSchemas[] = {
    R"({"type":"object","properties":{"age":{"type":"integer","minimum":0,"maximum":150},
        "name":{"type":"string","maxLength":20},"tags":{"type":"array","items":{"type":"string"},
        "maxItems":3}},"required":["age","name"]})",
    R"({"type":"array","items":{"type":"integer","minimum":-5,"maximum":5},"minItems":2,
        "maxItems":4})",
    R"({"enum":["red","green","blue"]})",
    R"({})",
    R"({"type":"object","additionalProperties":{"type":"number"}})",
    R"({"type":"string","minLength":3,"maxLength":8})",
    R"({"$ref":"#/$defs/n","$defs":{"n":{"type":"object","properties":{"kids":{"type":"array",
        "items":{"$ref":"#/$defs/n"},"maxItems":2},"v":{"type":"integer"}},"required":["v"]}}})",
    R"({"type":["integer","string","null"]})",
    R"({"type":"object","properties":{"inner":{"type":"object","properties":{"a":{"type":"boolean"},
        "b":{"type":"null"}},"required":["b"]},"z":{"type":"number"}},"required":["inner"]})",
    R"({"anyOf":[{"type":"object","properties":{"kind":{"const":"a"},"x":{"type":"integer"}},
        "required":["kind","x"]},{"type":"object","properties":{"kind":{"const":"b"},
        "y":{"type":"string"}},"required":["kind","y"]}]})",
    R"({"type":"boolean"})",
    R"({"type":"integer","exclusiveMinimum":100,"maximum":100000})",
    R"({"type":"array","items":{"type":"array","items":{"type":"boolean"},"maxItems":2},
        "maxItems":3})",
    R"({"type":"object","properties":{"s":{"type":"string","maxLength":1}},"required":["s"]})",
    R"({"type":"number"})",
    R"({"type":"object","properties":{"a":{"type":"string","nullable":true}},"required":["a"]})",
    R"({"type":"object"})",
    R"({"$ref":"#/definitions/p","definitions":{"p":{"type":"object","properties":{
        "q":{"type":"integer"}}}}})",
    R"({"type":"object","properties":{"list":{"type":"array","items":{"type":"object",
        "properties":{"id":{"type":"integer"},"label":{"type":"string","maxLength":12}},
        "required":["id"]}}},"required":["list"]})",
    R"({"const":{"k":[1,"two",null]}})",
};

void WalkJsonSchemas(const Tokenizer& tok, const std::shared_ptr<const VocabIndex>& vocab,
                     int32_t eos, int seeds) {
  for (const char* text : kSchemas) {
    const json schema = json::parse(text);
    auto g = test::MustCompile(schema);
    ASSERT_NE(g, nullptr);
    for (int seed = 1; seed <= seeds; ++seed) {
      const std::string out = Walk(g, tok, vocab, eos, seed);
      const json v = json::parse(out, nullptr, /*allow_exceptions=*/false);
      ASSERT_FALSE(v.is_discarded()) << "not JSON: '" << out << "' for " << text;
      EXPECT_TRUE(Valid(v, schema, schema)) << out << " for " << text;
    }
  }
}

TEST(GrammarRandomWalkTest, SmallVocabJsonSchemas) {
  const Tokenizer* tok = test::SmallTokenizer();
  ASSERT_NE(tok, nullptr);
  WalkJsonSchemas(*tok, VocabIndex::Build(*tok), tok->TokenId("<eos>"), 3);
}

TEST(GrammarRandomWalkTest, Gemma4VocabJsonSchemas) {
  G4_REQUIRE_NPM_TOKENIZER();
  ASSERT_NE(test::Gemma4Vocab(), nullptr);
  WalkJsonSchemas(*test::Gemma4Tokenizer(), test::Gemma4Vocab(), gemma4::kEosId, 2);
}

TEST(GrammarRandomWalkTest, Gemma4VocabToolCalls) {
  G4_REQUIRE_NPM_TOKENIZER();
  ASSERT_NE(test::Gemma4Vocab(), nullptr);
  const json tools = json::parse(R"([
    {"type":"function","function":{"name":"get_weather","parameters":{"type":"object",
      "properties":{"location":{"type":"string","maxLength":30},"days":{"type":"integer",
      "minimum":1,"maximum":14},"Units":{"enum":["c","f"]},"alerts":{"type":["boolean","null"]},
      "hours":{"type":"array","items":{"type":"integer"},"maxItems":3}},"required":["location"]}}},
    {"type":"function","function":{"name":"search","parameters":{"type":"object","properties":{
      "query":{"type":"string"},"filters":{"type":"object","properties":{
      "site":{"type":"string"}}}},"required":["query"]}}},
    {"type":"function","function":{"name":"ping"}}])");
  auto g = CompileToolCalls(tools, std::nullopt, /*parallel=*/true);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    const std::string out = Walk(*g, *test::Gemma4Tokenizer(), test::Gemma4Vocab(),
                                 gemma4::kEosId, seed);
    ASSERT_FALSE(out.empty());
    // One or more "<|tool_call>call:NAME{...}<tool_call|>", each parsing back to valid args.
    size_t pos = 0;
    int calls = 0;
    while (pos < out.size()) {
      const std::string start = "<|tool_call>call:";
      ASSERT_EQ(out.compare(pos, start.size(), start), 0) << out;
      pos += start.size();
      const size_t brace = out.find('{', pos);
      ASSERT_NE(brace, std::string::npos) << out;
      const std::string name = out.substr(pos, brace - pos);
      pos = brace;
      const json args = json::parse(tool_syntax::ParseValue(out, &pos).dump());
      json params = json::object();
      for (const json& t : tools) {
        if (t["function"]["name"] == name) {
          params = t["function"].value("parameters", json::object());
        }
      }
      EXPECT_TRUE(args.is_object()) << out;
      EXPECT_TRUE(Valid(args, params, params)) << args.dump() << " for " << name << " in " << out;
      ASSERT_EQ(out.compare(pos, 12, "<tool_call|>"), 0) << out;
      pos += 12;
      ++calls;
    }
    EXPECT_GE(calls, 1);
  }
}

}  // namespace
}  // namespace g4::grammar
