// The grammar automaton at symbol level: valid documents are accepted whole, invalid ones are
// rejected at the first symbol that no valid document could continue with.
#include <gtest/gtest.h>

#include "runtime/grammar/grammar.h"
#include "runtime/grammar/grammar_test_util.h"

namespace g4::grammar {
namespace {

using nlohmann::json;
using test::Matches;
using test::MustCompile;
using test::RejectAt;

// nlohmann::json keeps object keys sorted, so "declared order" is alphabetical here.
TEST(GrammarMatcherTest, ObjectWithRequiredAndOptionalProperties) {
  auto g = MustCompile(json::parse(R"({"type":"object","properties":{
      "age":{"type":"integer"},"name":{"type":"string"},"ok":{"type":"boolean"}},
      "required":["name","ok"]})"));
  EXPECT_TRUE(Matches(g, R"({"age":3,"name":"Bo","ok":true})"));
  EXPECT_TRUE(Matches(g, R"({"name":"Bo","ok":false})"));
  EXPECT_TRUE(Matches(g, "{\n  \"name\": \"Bo\",\n  \"ok\": false\n}"));
  EXPECT_EQ(RejectAt(g, R"({"ok":true})"), 2);                // "name" is required first
  EXPECT_EQ(RejectAt(g, R"({"name":"Bo"})"), 12);             // '}' before required "ok"
  EXPECT_EQ(RejectAt(g, R"({"age":"3"})"), 7);                // wrong type
  EXPECT_EQ(RejectAt(g, R"({"name":"Bo","extra":1})"), 14);   // undeclared property
  EXPECT_EQ(RejectAt(g, R"({"name":"Bo","age":3})"), 14);     // out of order
  EXPECT_EQ(RejectAt(g, R"({"name":"Bo","ok":true,})"), 22);  // no property left
  bool complete = true;
  EXPECT_EQ(RejectAt(g, R"({"name":"Bo","ok":true)", &complete), -1);
  EXPECT_FALSE(complete);
}

TEST(GrammarMatcherTest, PropertiesInTheOrderTheSchemaDeclares) {
  // ordered_json keeps the client's order ("zeta" before "alpha"); a plain json would sort it.
  auto g = MustCompile(nlohmann::ordered_json::parse(R"({"type":"object","properties":{
      "zeta":{"type":"integer"},"alpha":{"type":"integer"}},"required":["zeta","alpha"]})"));
  EXPECT_TRUE(Matches(g, R"({"zeta":1,"alpha":2})"));
  EXPECT_EQ(RejectAt(g, R"({"alpha":2,"zeta":1})"), 2);
}

TEST(GrammarMatcherTest, WhitespaceIsBounded) {
  auto g = MustCompile(json::parse(R"({"type":"array","items":{"type":"integer"}})"));
  EXPECT_TRUE(Matches(g, "[1, 2,\n\t3 ]"));
  EXPECT_EQ(RejectAt(g, "[\n\n1]"), 2);  // one newline per gap
  const std::string blanks(20, ' ');
  EXPECT_TRUE(Matches(g, "[" + blanks + "1]"));
  EXPECT_EQ(RejectAt(g, "[" + blanks + " 1]"), 21);
  EXPECT_EQ(RejectAt(g, " [1]"), 0);  // no whitespace before the value
}

TEST(GrammarMatcherTest, ArrayCounts) {
  auto g = MustCompile(json::parse(R"({"type":"array","items":{"type":"boolean"},
                                      "minItems":1,"maxItems":2})"));
  EXPECT_EQ(RejectAt(g, "[]"), 1);
  EXPECT_TRUE(Matches(g, "[true]"));
  EXPECT_TRUE(Matches(g, "[true,false]"));
  EXPECT_EQ(RejectAt(g, "[true,false,true]"), 11);
}

TEST(GrammarMatcherTest, StringLengthInCodePoints) {
  auto g = MustCompile(json::parse(R"({"type":"string","minLength":2,"maxLength":3})"));
  EXPECT_TRUE(Matches(g, "\"\xC3\xA9t\xC3\xA9\""));  // "été": 3 code points, 5 bytes
  EXPECT_TRUE(Matches(g, "\"ab\""));
  EXPECT_EQ(RejectAt(g, "\"a\""), 2);
  EXPECT_EQ(RejectAt(g, "\"abcd\""), 4);
  EXPECT_EQ(RejectAt(g, "\"ab\\n\\n\""), 5);  // an escape counts as one code point
  EXPECT_TRUE(Matches(g, "\"\\ud83d\\ude00x\""));  // a surrogate pair is one code point
}

TEST(GrammarMatcherTest, StringEscapesAndUtf8) {
  auto g = MustCompile(json::parse(R"({"type":"string"})"));
  EXPECT_TRUE(Matches(g, R"("a\"b\\c\/d\b\f\n\r\t\u00e9\u20AC")"));
  EXPECT_EQ(RejectAt(g, R"("\x")"), 2);
  EXPECT_EQ(RejectAt(g, R"("\u12G4")"), 5);
  EXPECT_EQ(RejectAt(g, "\"a\nb\""), 2);           // raw control byte
  EXPECT_EQ(RejectAt(g, R"("\udc00")"), 4);        // lone low surrogate: "\udc" is a dead end
  EXPECT_EQ(RejectAt(g, R"("\ud800x")"), 7);       // high surrogate without its low half
  EXPECT_EQ(RejectAt(g, R"("\ud800\u0041")"), 9);
  EXPECT_EQ(RejectAt(g, "\"\xC3(\""), 2);          // bad continuation
  EXPECT_EQ(RejectAt(g, "\"\xC0\x80\""), 1);       // overlong
  EXPECT_EQ(RejectAt(g, "\"\xED\xA0\x80\""), 2);   // UTF-8 surrogate
  EXPECT_EQ(RejectAt(g, "\"\xF4\x90\x80\x80\""), 2);  // > U+10FFFF
  EXPECT_EQ(RejectAt(g, "\"\xC3\""), 2);           // cut character
  EXPECT_TRUE(Matches(g, "\"\xF0\x9F\x99\x82\""));
}

TEST(GrammarMatcherTest, IntegerRangeByPrefixFeasibility) {
  auto g = MustCompile(json::parse(R"({"type":"integer","minimum":10,"maximum":150})"));
  EXPECT_TRUE(Matches(g, "10"));
  EXPECT_TRUE(Matches(g, "150"));
  EXPECT_TRUE(Matches(g, "99"));
  EXPECT_EQ(RejectAt(g, "151"), 2);
  EXPECT_EQ(RejectAt(g, "160"), 2);  // 16 is in range, 160 and beyond are not
  EXPECT_EQ(RejectAt(g, "1000"), 3);
  EXPECT_EQ(RejectAt(g, "-5"), 0);
  EXPECT_EQ(RejectAt(g, "0"), 0);
  EXPECT_EQ(RejectAt(g, "012"), 0);
  bool complete = true;
  EXPECT_EQ(RejectAt(g, "1", &complete), -1);
  EXPECT_FALSE(complete);  // 1 is below the minimum, but 10..19 are fine
  auto neg = MustCompile(json::parse(R"({"type":"integer","exclusiveMinimum":-20.5,
                                        "exclusiveMaximum":0})"));
  EXPECT_TRUE(Matches(neg, "-20"));
  EXPECT_TRUE(Matches(neg, "-1"));
  EXPECT_EQ(RejectAt(neg, "0"), 0);
  EXPECT_EQ(RejectAt(neg, "-21"), 2);
  EXPECT_EQ(RejectAt(neg, "-0"), 1);
  EXPECT_EQ(RejectAt(neg, "-3"), -1);
  EXPECT_EQ(RejectAt(neg, "-30"), 2);
}

TEST(GrammarMatcherTest, NumbersAreBounded) {
  auto g = MustCompile(json::parse(R"({"type":"number"})"));
  EXPECT_TRUE(Matches(g, "-0.5e+10"));
  EXPECT_TRUE(Matches(g, "12.25"));
  EXPECT_TRUE(Matches(g, "0"));
  EXPECT_EQ(RejectAt(g, "01"), 1);
  EXPECT_EQ(RejectAt(g, "1."), -1);
  EXPECT_FALSE(Matches(g, "1."));
  EXPECT_EQ(RejectAt(g, "1e1234"), 4);  // 2 exponent digits: always a finite double
  EXPECT_TRUE(Matches(g, "-1.5E-99"));
  EXPECT_EQ(RejectAt(g, std::string(16, '9')), 15);
  EXPECT_EQ(RejectAt(g, "+1"), 0);
}

TEST(GrammarMatcherTest, EnumConstAnyOfAndTypeArrays) {
  auto e = MustCompile(json::parse(R"({"enum":["red","green",3,null]})"));
  EXPECT_TRUE(Matches(e, R"("red")"));
  EXPECT_TRUE(Matches(e, "3"));
  EXPECT_TRUE(Matches(e, "null"));
  EXPECT_EQ(RejectAt(e, R"("blue")"), 1);
  auto c = MustCompile(json::parse(R"({"const":{"a":[1,2]}})"));
  EXPECT_TRUE(Matches(c, R"({"a":[1,2]})"));
  auto a = MustCompile(json::parse(R"({"anyOf":[{"type":"integer","maximum":5},
      {"type":"string","maxLength":1}]})"));
  EXPECT_TRUE(Matches(a, "5"));
  EXPECT_TRUE(Matches(a, R"("x")"));
  EXPECT_EQ(RejectAt(a, "6"), 0);
  auto t = MustCompile(json::parse(R"({"type":["integer","null"]})"));
  EXPECT_TRUE(Matches(t, "null"));
  EXPECT_TRUE(Matches(t, "-7"));
  EXPECT_EQ(RejectAt(t, "true"), 0);
  // Overlapping alternatives share a prefix until they part.
  auto o = MustCompile(json::parse(R"({"anyOf":[
      {"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]},
      {"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}]})"));
  EXPECT_TRUE(Matches(o, R"({"a":1})"));
  EXPECT_TRUE(Matches(o, R"({"a":"1"})"));
  EXPECT_EQ(RejectAt(o, R"({"a":true})"), 5);
}

TEST(GrammarMatcherTest, LongEnumsStayExact) {
  json values = json::array();
  // insert, not "v" + s: GCC 12's -Wrestrict misfires on the latter.
  for (int i = 0; i < 500; ++i) values.push_back(std::to_string(i).insert(0, 1, 'v'));
  values.push_back(7);
  values.push_back("v");
  auto g = MustCompile(json{{"enum", values}});
  EXPECT_TRUE(Matches(g, R"("v499")"));
  EXPECT_TRUE(Matches(g, R"("v0")"));
  EXPECT_TRUE(Matches(g, R"("v")"));
  EXPECT_TRUE(Matches(g, "7"));
  EXPECT_EQ(RejectAt(g, R"("v500")"), 4);
  EXPECT_EQ(RejectAt(g, R"("v01")"), 3);
  EXPECT_EQ(RejectAt(g, "8"), 0);
  bool complete = true;
  EXPECT_EQ(RejectAt(g, R"("v49)", &complete), -1);
  EXPECT_FALSE(complete);
}

TEST(GrammarMatcherTest, AnyValueAndJsonObject) {
  auto any = MustCompile(json::parse("{}"));
  EXPECT_TRUE(Matches(any, R"({"a":[1,{"b":null}],"c":"d"})"));
  EXPECT_TRUE(Matches(any, "[true, false, -1.5e3]"));
  EXPECT_TRUE(Matches(any, "\"s\""));
  auto obj = JsonObjectGrammar();
  EXPECT_TRUE(Matches(obj, R"({"x": {"y": [1, 2]}})"));
  EXPECT_TRUE(Matches(obj, "{}"));
  EXPECT_EQ(RejectAt(obj, "[1]"), 0);
  auto add = MustCompile(json::parse(R"({"type":"object","additionalProperties":
                                        {"type":"integer"}})"));
  EXPECT_TRUE(Matches(add, R"({"a":1,"b":2})"));
  EXPECT_EQ(RejectAt(add, R"({"a":"x"})"), 5);
}

TEST(GrammarMatcherTest, RecursiveRef) {
  auto g = MustCompile(json::parse(R"({"$ref":"#/$defs/node","$defs":{"node":{
      "type":"object","properties":{"v":{"type":"integer"},
      "kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["v"]}}})"));
  EXPECT_TRUE(Matches(g, R"({"kids":[{"v":2},{"kids":[{"kids":[],"v":4}],"v":3}],"v":1})"));
  EXPECT_EQ(RejectAt(g, R"({"kids":[{"w":2}],"v":1})"), 11);
  // Nesting is bounded (about 30 levels), never unbounded.
  std::string deep;
  for (int i = 0; i < 60; ++i) deep += R"({"kids":[)";
  EXPECT_GE(RejectAt(g, deep), 0);
}

TEST(GrammarMatcherTest, TerminatedAfterAClosedValue) {
  auto g = MustCompile(json::parse(R"({"type":"object"})"));
  GrammarMatcher m(g, nullptr, {});
  const auto syms = test::Syms("{}");
  ASSERT_TRUE(m.AcceptSymbols(syms));
  EXPECT_TRUE(m.IsComplete());
  EXPECT_TRUE(m.IsTerminated());
  auto n = MustCompile(json::parse(R"({"type":"integer"})"));
  GrammarMatcher k(n, nullptr, {});
  ASSERT_TRUE(k.AcceptSymbols(test::Syms("12")));
  EXPECT_TRUE(k.IsComplete());
  EXPECT_FALSE(k.IsTerminated());  // more digits could follow
  EXPECT_FALSE(k.AcceptSymbols(test::Syms("3x")));  // rejected whole: state unchanged
  EXPECT_TRUE(k.AcceptSymbols(test::Syms("3")));
}

}  // namespace
}  // namespace g4::grammar
