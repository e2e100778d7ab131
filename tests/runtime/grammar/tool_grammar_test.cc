// Tool-call grammars: what tool_syntax::FormatValue writes is accepted, anything off-schema is
// rejected, and tool_choice / parallel calls behave.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "chat/tool_syntax.h"
#include "runtime/grammar/grammar.h"
#include "runtime/grammar/grammar_test_util.h"

namespace g4::grammar {
namespace {

using nlohmann::json;
using test::Matches;
using test::RejectAt;

const char* kTools = R"([
  {"type":"function","function":{"name":"get_weather","parameters":{"type":"object",
    "properties":{"location":{"type":"string"},"days":{"type":"integer","minimum":1,"maximum":14},
      "Units":{"enum":["c","f"]},"alerts":{"type":["boolean","null"]},
      "hours":{"type":"array","items":{"type":"integer"}},
      "where":{"type":"object","properties":{"lat":{"type":"number"},"lon":{"type":"number"}},
        "required":["lat","lon"]}},
    "required":["location"]}}},
  {"type":"function","function":{"name":"get","parameters":{}}},
  {"type":"function","function":{"name":"ping"}}])";

std::shared_ptr<const Grammar> Tools(bool parallel, std::optional<std::string> only = {}) {
  auto g = CompileToolCalls(json::parse(kTools), only, parallel);
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  return g.ok() ? *g : nullptr;
}

std::string Call(const std::string& name, const json& args) {
  return "<|tool_call>call:" + name + tool_syntax::FormatValue(args, /*quote_keys=*/false) +
         "<tool_call|>";
}

TEST(ToolGrammarTest, AcceptsWhatFormatValueWrites) {
  auto g = Tools(false);
  EXPECT_TRUE(Matches(g, "<|tool_call>call:get_weather{days:3,location:<|\"|>Paris<|\"|>}"
                         "<tool_call|>"));
  const json args[] = {
      {{"location", "Paris"}},
      {{"location", "Saint-\xC3\x89tienne, \"FR\"\n{x}"}, {"days", 14}, {"Units", "f"}},
      {{"location", ""}, {"alerts", nullptr}, {"hours", {1, 2, 3}}},
      {{"location", "x"}, {"alerts", true}, {"hours", json::array()},
       {"where", {{"lat", 48.85}, {"lon", -2.5e-3}}}},
  };
  for (const json& a : args) {
    EXPECT_TRUE(Matches(g, Call("get_weather", a))) << Call("get_weather", a);
  }
  EXPECT_TRUE(Matches(g, Call("get", json::object())));
  EXPECT_TRUE(Matches(g, Call("ping", {{"any", {1, "x", nullptr}}, {"b", {{"c", false}}}})));
}

TEST(ToolGrammarTest, KeysInCaseInsensitiveSortedOrder) {
  auto g = Tools(false);
  // "alerts" < "days" < "location" < "Units" (case-insensitively), as FormatValue sorts them.
  EXPECT_TRUE(Matches(g, "<|tool_call>call:get_weather{alerts:None,days:2,location:<|\"|>a<|\"|>,"
                         "Units:<|\"|>c<|\"|>}<tool_call|>"));
  EXPECT_GE(RejectAt(g, "<|tool_call>call:get_weather{location:<|\"|>a<|\"|>,days:2}"), 0);
}

TEST(ToolGrammarTest, RejectsOffSchemaCalls) {
  auto g = Tools(false);
  EXPECT_EQ(RejectAt(g, "<|tool_call>call:get_time{}"), 10);
  EXPECT_EQ(RejectAt(g, "call:get{}"), 0);
  const std::string p = "<|tool_call>call:get_weather{";
  EXPECT_EQ(RejectAt(g, p + "days:<|\"|>3<|\"|>"), 18 + 5);          // wrong type
  EXPECT_EQ(RejectAt(g, p + "days:15"), 18 + 6);                       // out of range
  EXPECT_EQ(RejectAt(g, p + "days:3}"), 18 + 6);                       // location missing
  EXPECT_EQ(RejectAt(g, p + "\"location\""), 18);                      // keys are bare
  EXPECT_EQ(RejectAt(g, p + "location:\"x\""), 18 + 9);                // strings use <|"|>
  EXPECT_EQ(RejectAt(g, p + "location:<|\"|>x<|\"|>, days"), 18 + 13);  // no whitespace
  EXPECT_EQ(RejectAt(g, p + "alerts:null"), 18 + 7);                   // null is None
  EXPECT_EQ(RejectAt(g, p + "location:<|\"|>x<|\"|>}<|tool_call>"), 18 + 13);  // just one call
  // The content of a string never spells the quote token as text.
  EXPECT_EQ(RejectAt(g, p + "location:<|\"|>a<|\"|>"), -1);
  EXPECT_EQ(RejectAt(g, p + "location:<|\"|>a<|\"|"), -1);
  std::vector<int> s = test::Syms(p + "location:<|\"|>a<|\"|");
  s.push_back('>');
  GrammarMatcher m(g, nullptr, {});
  EXPECT_FALSE(m.AcceptSymbols(s));
}

TEST(ToolGrammarTest, ParallelCallsAndCompletion) {
  auto one = Tools(false);
  auto many = Tools(true);
  const std::string a = Call("get", json::object()), b = Call("ping", {{"x", 1}});
  EXPECT_TRUE(Matches(many, a));
  EXPECT_TRUE(Matches(many, a + b + a));
  EXPECT_FALSE(Matches(one, a + b));
  GrammarMatcher m(one, nullptr, {});
  ASSERT_TRUE(m.AcceptSymbols(test::Syms(a)));
  EXPECT_TRUE(m.IsTerminated());
  GrammarMatcher p(many, nullptr, {});
  ASSERT_TRUE(p.AcceptSymbols(test::Syms(a)));
  EXPECT_TRUE(p.IsComplete());
  EXPECT_FALSE(p.IsTerminated());
}

TEST(ToolGrammarTest, ManyToolsSharingAPrefix) {
  json tools = json::array();
  for (int i = 0; i < 100; ++i) {
    tools.push_back({{"type", "function"},
                     {"function", {{"name", "get_" + std::to_string(i)},
                                   {"parameters", {{"type", "object"},
                                                   {"properties", {{"n", {{"const", i}}}}},
                                                   {"required", {"n"}}}}}}});
  }
  auto g = CompileToolCalls(tools, std::nullopt, false);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  for (int i : {0, 1, 10, 57, 99}) {
    EXPECT_TRUE(Matches(*g, Call("get_" + std::to_string(i), {{"n", i}}))) << i;
    EXPECT_FALSE(Matches(*g, Call("get_" + std::to_string(i), {{"n", i + 1}}))) << i;
  }
  EXPECT_FALSE(Matches(*g, Call("get_100", {{"n", 100}})));
}

TEST(ToolGrammarTest, OnlyName) {
  auto g = Tools(false, "ping");
  EXPECT_TRUE(Matches(g, Call("ping", json::object())));
  EXPECT_EQ(RejectAt(g, Call("get", json::object())), 6);
  auto bad = CompileToolCalls(json::parse(kTools), std::string("nope"), false);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "tool_choice: function 'nope' is not among the declared tools");
}

TEST(ToolGrammarTest, SchemaErrorsNameTheTool) {
  auto g = CompileToolCalls(json::parse(R"([{"type":"function","function":{"name":"a"}},
      {"type":"function","function":{"name":"b","parameters":{"type":"object",
      "properties":{"x":{"type":"string","pattern":"y"}}}}}])"), std::nullopt, false);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().message(),
            "tools[1].function.parameters.properties.x: keyword 'pattern' is not supported");
  auto s = CompileToolCalls(json::parse(R"([{"type":"function","function":{"name":"a",
      "parameters":{"type":"string"}}}])"), std::nullopt, false);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), ::testing::HasSubstr("must be an object schema"));
  auto key = CompileToolCalls(json::parse(R"([{"type":"function","function":{"name":"a",
      "parameters":{"type":"object","properties":{"a b":{"type":"string"}}}}}])"),
                              std::nullopt, false);
  ASSERT_FALSE(key.ok());
  EXPECT_THAT(key.status().message(), ::testing::HasSubstr("'a b' cannot be written"));
  EXPECT_FALSE(CompileToolCalls(json::parse(R"([{"type":"function","function":{}}])"),
                                std::nullopt, false).ok());
  EXPECT_FALSE(CompileToolCalls(json::object(), std::nullopt, false).ok());
}

}  // namespace
}  // namespace g4::grammar
