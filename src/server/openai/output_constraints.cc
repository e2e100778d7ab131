#include "server/openai/output_constraints.h"

#include <initializer_list>
#include <optional>
#include <string>

namespace g4::openai {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

// ordered[k0][k1]...: the value at a path of object keys, or null where one is missing (a body
// with duplicate keys may differ between its two parses; never index a missing key).
const ojson& At(const ojson& ordered, std::initializer_list<const char*> path) {
  static const ojson kNull;
  const ojson* v = &ordered;
  for (const char* key : path) {
    if (!v->is_object()) return kNull;
    const auto it = v->find(key);
    if (it == v->end()) return kNull;
    v = &*it;
  }
  return *v;
}

// OpenAI's rule for function names: 1-64 of [a-zA-Z0-9_-].
bool ValidToolName(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

MaybeError ValidateTools(const json& tools) {
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string where = "tools[" + std::to_string(i) + "]";
    const json& tool = tools[i];
    if (!tool.is_object()) {
      return BadRequest(where + " must be an object, got " + JsonTypePhrase(tool), "tools");
    }
    const auto type = tool.find("type");
    if (type == tool.end() || !type->is_string() || *type != "function") {
      return BadRequest(where + ".type must be \"function\"", "tools");
    }
    const auto function = tool.find("function");
    if (function == tool.end() || !function->is_object()) {
      return BadRequest(where + ".function must be an object", "tools");
    }
    const auto name = function->find("name");
    if (name == function->end() || !name->is_string() ||
        !ValidToolName(name->get<std::string>())) {
      return BadRequest(where + ".function.name must be 1-64 letters, digits, '_' or '-'",
                        "tools");
    }
    for (size_t k = 0; k < i; ++k) {
      if (tools[k]["function"]["name"] == *name) {
        return BadRequest(where + ".function.name \"" + name->get<std::string>() +
                              "\" is declared twice",
                          "tools");
      }
    }
    const auto params = function->find("parameters");
    if (params != function->end() && !params->is_null() && !params->is_object()) {
      return BadRequest(where + ".function.parameters must be an object (a JSON Schema)",
                        "tools");
    }
  }
  return std::nullopt;
}

// tool_choice: "none" | "auto" | "required" | {"type": "function", "function": {"name"}}.
MaybeError ReadToolChoice(const json& choice, const std::string& param, OutputConstraints* out) {
  using TC = OutputConstraints::ToolChoice;
  if (choice.is_string()) {
    const std::string& s = choice.get_ref<const std::string&>();
    if (s == "none") out->tool_choice = TC::kNone;
    else if (s == "auto") out->tool_choice = TC::kAuto;
    else if (s == "required") out->tool_choice = TC::kRequired;
    else return BadRequest(param + " must be \"none\", \"auto\", \"required\" or a function, "
                               "got \"" + s + "\"", param);
    return std::nullopt;
  }
  const json* function = nullptr;
  if (choice.is_object()) {
    const auto f = choice.find("function");
    // function_call (legacy) names the function directly: {"name": ...}.
    function = f != choice.end() ? &*f : &choice;
  }
  if (function == nullptr || !function->is_object() || !function->contains("name") ||
      !(*function)["name"].is_string()) {
    return BadRequest(param + " must be a string or {\"type\": \"function\", \"function\": "
                              "{\"name\": ...}}", param);
  }
  out->tool_choice = TC::kNamed;
  out->tool_name = (*function)["name"].get<std::string>();
  return std::nullopt;
}

}  // namespace

MaybeError ReadToolFields(const FieldReader& r, const nlohmann::ordered_json& ordered,
                          OutputConstraints* out) {
  using TC = OutputConstraints::ToolChoice;
  const json* tools = nullptr;
  if (MaybeError e = r.Array("tools", &tools)) return e;
  if (tools != nullptr) {
    if (MaybeError e = ValidateTools(*tools)) return e;
    out->tools = *tools;
  }
  for (std::string_view key : {"function_call", "tool_choice"}) {  // tool_choice wins
    if (const json* choice = r.Find(key)) {
      if (MaybeError e = ReadToolChoice(*choice, std::string(key), out)) return e;
    }
  }
  if (MaybeError e = r.Bool("parallel_tool_calls", &out->parallel_tool_calls)) return e;
  if (out->tools.empty()) {
    if (out->tool_choice == TC::kRequired || out->tool_choice == TC::kNamed) {
      return BadRequest("tool_choice asks for a tool call but no tools are declared",
                        "tool_choice");
    }
    out->tool_choice = TC::kNone;
    return std::nullopt;
  }
  if (out->tool_choice == TC::kNone) return std::nullopt;
  std::optional<std::string> only;
  if (out->tool_choice == TC::kNamed) only = out->tool_name;
  auto grammar = grammar::CompileToolCalls(At(ordered, {"tools"}), only, out->parallel_tool_calls);
  if (!grammar.ok()) {
    const std::string m = grammar.status().message();
    return BadRequest(m, m.rfind("tool_choice", 0) == 0 ? "tool_choice" : "tools");
  }
  out->grammar = *std::move(grammar);
  out->grammar_from_tool_call = out->tool_choice == TC::kAuto;
  return std::nullopt;
}

MaybeError ReadResponseFormat(const FieldReader& r, const nlohmann::ordered_json& ordered,
                              OutputConstraints* out) {
  using F = OutputConstraints::Format;
  const json* format = nullptr;
  if (MaybeError e = r.Object("response_format", &format)) return e;
  if (format == nullptr) return std::nullopt;
  const auto type = format->find("type");
  if (type == format->end() || !type->is_string()) {
    return BadRequest("response_format.type must be a string", "response_format");
  }
  const std::string& kind = type->get_ref<const std::string&>();
  if (kind == "text") return std::nullopt;
  if (kind != "json_object" && kind != "json_schema") {
    return BadRequest("response_format.type must be \"text\", \"json_object\" or "
                      "\"json_schema\", got \"" + kind + "\"",
                      "response_format");
  }
  if (out->grammar != nullptr && !out->grammar_from_tool_call) {
    return BadRequest("response_format " + kind + " cannot be combined with a forced tool call "
                      "(tool_choice)", "response_format");
  }
  if (kind == "json_object") {
    out->format = F::kJsonObject;
    out->grammar = grammar::JsonObjectGrammar();
  } else {
    const auto spec = format->find("json_schema");
    if (spec == format->end() || !spec->is_object()) {
      return BadRequest("response_format.json_schema must be an object {name, schema, strict}",
                        "response_format");
    }
    const auto schema = spec->find("schema");
    if (schema == spec->end() || !(schema->is_object() || schema->is_boolean())) {
      return BadRequest("response_format.json_schema.schema must be a JSON Schema object",
                        "response_format");
    }
    auto grammar = grammar::CompileJsonSchema(
        At(ordered, {"response_format", "json_schema", "schema"}),
        "response_format.json_schema.schema");
    if (!grammar.ok()) return BadRequest(grammar.status().message(), "response_format");
    out->format = F::kJsonSchema;
    out->grammar = *std::move(grammar);
  }
  // A JSON answer replaces tool calls: the model writes the object, never a call.
  out->grammar_from_tool_call = false;
  out->tool_choice = OutputConstraints::ToolChoice::kNone;
  return std::nullopt;
}

}  // namespace g4::openai
