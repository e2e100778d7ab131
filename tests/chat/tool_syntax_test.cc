// Tests for writing Gemma 4 tool syntax: value formatting, key order, declarations.
#include "chat/tool_syntax.h"

#include <gtest/gtest.h>

namespace g4 {
namespace {

using json = nlohmann::json;

TEST(ToolSyntaxTest, FormatValue) {
  const json v = json::parse(R"({"b": [1, 2.5, "x"], "A": {"z": false, "y": null}, "c": "s"})");
  // dictsort is case-insensitive: A, b, c.
  EXPECT_EQ(tool_syntax::FormatValue(v, false),
            "{A:{y:None,z:false},b:[1,2.5,<|\"|>x<|\"|>],c:<|\"|>s<|\"|>}");
  EXPECT_EQ(tool_syntax::FormatValue(v, true),
            "{<|\"|>A<|\"|>:{<|\"|>y<|\"|>:None,<|\"|>z<|\"|>:false},<|\"|>b<|\"|>:[1,2.5,"
            "<|\"|>x<|\"|>],<|\"|>c<|\"|>:<|\"|>s<|\"|>}");
}

TEST(ToolSyntaxTest, FormatResponse) {
  EXPECT_EQ(tool_syntax::FormatResponse("f", json("ok")), "response:f{value:<|\"|>ok<|\"|>}");
  EXPECT_EQ(tool_syntax::FormatResponse("f", json::parse(R"({"t": 21, "s": "sun"})")),
            "response:f{s:<|\"|>sun<|\"|>,t:21}");
}

TEST(ToolSyntaxTest, DeclarationWithNestedSchema) {
  const json tool = json::parse(R"({"function": {
    "name": "search", "description": "Search",
    "parameters": {"type": "object", "required": ["q"], "properties": {
      "q": {"type": "string"},
      "filters": {"type": "object", "description": "F", "properties": {"lang": {"type": "string"}},
                  "required": ["lang"]},
      "tags": {"type": "array", "items": {"type": "string"}, "nullable": true}}}}})");
  EXPECT_EQ(tool_syntax::FormatDeclaration(tool),
            "declaration:search{description:<|\"|>Search<|\"|>,parameters:{properties:{"
            "filters:{description:<|\"|>F<|\"|>,properties:{lang:{type:<|\"|>STRING<|\"|>}},"
            "required:[<|\"|>lang<|\"|>],type:<|\"|>OBJECT<|\"|>},"
            "q:{type:<|\"|>STRING<|\"|>},"
            "tags:{items:{type:<|\"|>STRING<|\"|>},nullable:true,type:<|\"|>ARRAY<|\"|>}},"
            "required:[<|\"|>q<|\"|>],type:<|\"|>OBJECT<|\"|>}}");
  // No parameters at all.
  EXPECT_EQ(tool_syntax::FormatDeclaration(json::parse(R"({"name": "now"})")),
            "declaration:now{description:<|\"|><|\"|>}");
}

TEST(ToolSyntaxTest, TrimIsPythonStrip) {
  EXPECT_EQ(tool_syntax::Trim("\u3000 \t a b \n\u00a0"), "a b");
  EXPECT_EQ(tool_syntax::Trim(""), "");
  EXPECT_EQ(tool_syntax::Trim("\u2581x"), "\u2581x");
}

}  // namespace
}  // namespace g4
