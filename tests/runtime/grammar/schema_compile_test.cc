// JSON Schema compilation: supported keywords compile, unsupported ones are refused with their
// name and path, unsatisfiable schemas are refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/grammar/grammar.h"
#include "runtime/grammar/grammar_test_util.h"

namespace g4::grammar {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

std::string CompileError(const std::string& schema) {
  auto g = CompileJsonSchema(json::parse(schema), "response_format.json_schema.schema");
  if (g.ok()) return "OK";
  EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
  return g.status().message();
}

TEST(SchemaCompileTest, SupportedKeywordsCompile) {
  const char* schemas[] = {
      R"({})",
      R"(true)",
      R"({"type":"object","properties":{"a":{"type":"string","minLength":1,"maxLength":9,
          "description":"d","title":"t","default":"x","examples":["y"]}},"required":["a"],
          "additionalProperties":false,"$schema":"https://json-schema.org/draft/2020-12/schema",
          "$id":"x","$comment":"c"})",
      R"({"type":"array","items":{"type":"number"},"minItems":0,"maxItems":3})",
      R"({"type":"integer","minimum":-5,"maximum":5,"exclusiveMinimum":-6,
          "exclusiveMaximum":6})",
      R"({"type":["string","null"]})",
      R"({"enum":[1,"a",null,true,{"k":[1]}]})",
      R"({"const":"x"})",
      R"({"anyOf":[{"type":"string"},{"type":"integer"}]})",
      R"({"oneOf":[{"type":"string"},{"type":"integer"}]})",
      R"({"allOf":[{"type":"string"}]})",
      R"({"type":"string","nullable":true})",
      R"({"type":"boolean"})",
      R"({"type":"null"})",
      R"({"properties":{"a":{}}})",
      R"({"type":"object","additionalProperties":{"type":"integer"}})",
      R"({"$ref":"#/definitions/a","definitions":{"a":{"type":"integer"}}})",
      R"({"type":"object","properties":{"self":{"$ref":"#"}}})",
      R"({"type":"object","properties":{"a":false}})",
  };
  for (const char* s : schemas) EXPECT_EQ(CompileError(s), "OK") << s;
}

TEST(SchemaCompileTest, RefusedKeywordsNameThemselvesAndTheirPath) {
  const std::pair<const char*, const char*> cases[] = {
      {"pattern", R"({"type":"string","pattern":"a+"})"},
      {"format", R"({"type":"string","format":"date"})"},
      {"multipleOf", R"({"type":"integer","multipleOf":2})"},
      {"uniqueItems", R"({"type":"array","uniqueItems":true})"},
      {"not", R"({"not":{"type":"string"}})"},
      {"if", R"({"if":{},"then":{}})"},
      {"patternProperties", R"({"type":"object","patternProperties":{"a":{}}})"},
      {"prefixItems", R"({"type":"array","prefixItems":[{}]})"},
      {"contains", R"({"type":"array","contains":{}})"},
      {"minProperties", R"({"type":"object","minProperties":1})"},
      {"maxProperties", R"({"type":"object","maxProperties":1})"},
      {"dependentRequired", R"({"type":"object","dependentRequired":{}})"},
      {"propertyNames", R"({"type":"object","propertyNames":{}})"},
  };
  for (const auto& [kw, schema] : cases) {
    EXPECT_THAT(CompileError(schema), HasSubstr("keyword '" + std::string(kw) + "'")) << schema;
  }
  EXPECT_EQ(CompileError(R"({"type":"object","properties":{"age":{"type":"integer",
                             "multipleOf":3}}})"),
            "response_format.json_schema.schema.properties.age: keyword 'multipleOf' is not "
            "supported");
  EXPECT_THAT(CompileError(R"({"type":"array","items":{"type":"string","pattern":"x"}})"),
              HasSubstr("schema.items: keyword 'pattern'"));
  EXPECT_THAT(CompileError(R"({"allOf":[{},{}]})"), HasSubstr("keyword 'allOf'"));
  EXPECT_THAT(CompileError(R"({"type":"number","minimum":0})"), HasSubstr("keyword 'minimum'"));
  EXPECT_THAT(CompileError(R"({"type":"array","items":[{}]})"), HasSubstr("keyword 'items'"));
  EXPECT_THAT(CompileError(R"({"type":"string","anyOf":[{}]})"),
              HasSubstr("keyword 'type' next to 'anyOf'"));
  EXPECT_THAT(CompileError(R"({"$defs":{"a":{"pattern":"x"}},"$ref":"#/$defs/a"})"),
              HasSubstr("schema.$defs/a: keyword 'pattern'"));
}

TEST(SchemaCompileTest, UnsatisfiableAndMalformedSchemas) {
  EXPECT_THAT(CompileError(R"({"type":"array","minItems":3,"maxItems":2})"),
              HasSubstr("minItems > maxItems"));
  EXPECT_THAT(CompileError(R"({"type":"string","minLength":3,"maxLength":2})"),
              HasSubstr("minLength > maxLength"));
  EXPECT_THAT(CompileError(R"({"type":"integer","minimum":3,"maximum":2})"),
              HasSubstr("range is empty"));
  EXPECT_THAT(CompileError(R"({"type":"integer","exclusiveMinimum":1,"exclusiveMaximum":2})"),
              HasSubstr("range is empty"));
  EXPECT_THAT(CompileError(R"({"enum":[]})"), HasSubstr("can never be satisfied"));
  EXPECT_THAT(CompileError(R"({"type":"string","enum":[1,2]})"),
              HasSubstr("can never be satisfied"));
  EXPECT_THAT(CompileError("false"), HasSubstr("can never be satisfied"));
  EXPECT_THAT(CompileError(R"({"type":"object","properties":{},"required":["x"]})"),
              HasSubstr("required property 'x'"));
  EXPECT_THAT(CompileError(R"({"type":"object","properties":{"a":false},"required":["a"]})"),
              HasSubstr("schema.properties.a"));
  EXPECT_THAT(CompileError(R"({"type":"strange"})"), HasSubstr("unknown type 'strange'"));
  EXPECT_THAT(CompileError(R"({"$ref":"#/$defs/missing"})"), HasSubstr("#/$defs/missing"));
  EXPECT_THAT(CompileError(R"({"$ref":"http://x/y"})"), HasSubstr("'$ref'"));
  EXPECT_THAT(CompileError(R"({"type":"array","maxItems":-1})"), HasSubstr("maxItems"));
  EXPECT_THAT(CompileError("3"), HasSubstr("must be an object or a boolean"));
  EXPECT_THAT(CompileError(R"({"type":"object","required":["a"]})"),
              HasSubstr("keyword 'required' without 'properties'"));
}

TEST(SchemaCompileTest, TypeFiltersEnumValues) {
  auto g = test::MustCompile(json::parse(R"({"type":"string","enum":["a",1,"b"]})"));
  EXPECT_TRUE(test::Matches(g, R"("a")"));
  EXPECT_EQ(test::RejectAt(g, "1"), 0);
  auto c = test::MustCompile(json::parse(R"({"type":"integer","const":3})"));
  EXPECT_TRUE(test::Matches(c, "3"));
}

TEST(SchemaCompileTest, DeepOrCyclicSchemasAreBounded) {
  json s = json::object();
  for (int i = 0; i < 200; ++i) s = json{{"type", "array"}, {"items", s}};
  EXPECT_THAT(CompileError(s.dump()), HasSubstr("nests too deeply"));
  // A $ref cycle that never consumes anything compiles but accepts nothing.
  auto g = test::MustCompile(
      json::parse(R"({"$ref":"#/$defs/a","$defs":{"a":{"$ref":"#/$defs/a"}}})"));
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(test::RejectAt(g, "1"), 0);
}

TEST(SchemaCompileTest, AdditionalPropertiesNextToPropertiesWritesOnlyDeclaredOnes) {
  auto g = test::MustCompile(json::parse(R"({"type":"object","properties":{"a":{"type":"integer"}},
                                            "additionalProperties":true})"));
  EXPECT_TRUE(test::Matches(g, R"({"a":1})"));
  EXPECT_TRUE(test::Matches(g, R"({})"));
  EXPECT_EQ(test::RejectAt(g, R"({"b":1})"), 2);
}

}  // namespace
}  // namespace g4::grammar
