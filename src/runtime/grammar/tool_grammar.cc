// CompileToolCalls: "<|tool_call>call:NAME{args}<tool_call|>", args in Gemma's value syntax
// exactly as tool_syntax::FormatValue(args, /*quote_keys=*/false) writes them.
#include <algorithm>
#include <string>
#include <utility>

#include "runtime/grammar/grammar_internal.h"
#include "runtime/grammar/schema_compile.h"

namespace g4::grammar {
namespace {

constexpr int64_t kMaxParallelCalls = 64;

StatusOr<std::shared_ptr<const Grammar>> Compile(const nlohmann::ordered_json& tools,
                                                 const std::optional<std::string>& only_name,
                                                 bool parallel) {
  if (!tools.is_array()) return InvalidArgument("tools: must be an array");
  auto g = std::make_shared<Grammar>();
  WsNode(g.get());
  std::vector<std::pair<std::vector<int>, int32_t>> calls;  // name -> arguments node
  bool found = false;
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string where = "tools[" + std::to_string(i) + "].function";
    const nlohmann::ordered_json& tool = tools[i];
    const nlohmann::ordered_json& fn =
        tool.is_object() && tool.contains("function") ? tool["function"] : tool;
    if (!fn.is_object() || !fn.contains("name") || !fn["name"].is_string() ||
        fn["name"].get<std::string>().empty()) {
      return InvalidArgument(where + ".name: a function name is required");
    }
    const std::string name = fn["name"].get<std::string>();
    if (only_name.has_value() && name != *only_name) continue;
    found = true;
    int32_t args;
    const nlohmann::ordered_json* params = fn.contains("parameters") ? &fn["parameters"] : nullptr;
    if (params == nullptr || params->is_null() || (params->is_object() && params->empty())) {
      args = AnyObject(g.get(), Dialect::kGemma);  // no schema: any object in Gemma syntax
    } else {
      SchemaCompiler c(g.get(), Dialect::kGemma, *params, where + ".parameters");
      G4_ASSIGN_OR_RETURN(args, c.Compile(*params, ""));
      NodeKind kind = g->nodes[args].kind;
      if (kind == NodeKind::kRef) kind = g->nodes[g->nodes[args].children[0]].kind;
      if (kind != NodeKind::kObject) {
        return InvalidArgument(where + ".parameters: must be an object schema");
      }
    }
    calls.emplace_back(TextSymbols(name, Dialect::kJson), args);
  }
  if (only_name.has_value() && !found) {
    return InvalidArgument("tool_choice: function '" + *only_name +
                           "' is not among the declared tools");
  }
  if (calls.empty()) return InvalidArgument("tools: no function is declared");
  std::vector<int> start = {kSymToolCallStart};
  for (char c : std::string("call:")) start.push_back(static_cast<uint8_t>(c));
  // The names as one literal set whose children are the arguments: one stack however many
  // tools share a prefix.
  std::sort(calls.begin(), calls.end());
  Node names;
  names.kind = NodeKind::kLiteralSet;
  names.dialect = Dialect::kGemma;
  for (auto& [name, args] : calls) {
    names.literals.push_back(std::move(name));
    names.children.push_back(args);
  }
  Node one;
  one.kind = NodeKind::kSeq;
  one.dialect = Dialect::kGemma;
  one.children = {AddLiteral(g.get(), std::move(start), Dialect::kGemma),
                  AddNode(g.get(), std::move(names)),
                  AddLiteral(g.get(), {kSymToolCallEnd}, Dialect::kGemma)};
  g->root = AddNode(g.get(), std::move(one));
  if (parallel) {
    Node rep;
    rep.kind = NodeKind::kRepeat;
    rep.dialect = Dialect::kGemma;
    rep.children = {g->root};
    rep.min = 1;
    rep.max = kMaxParallelCalls;
    g->root = AddNode(g.get(), std::move(rep));
  }
  return std::shared_ptr<const Grammar>(std::move(g));
}

}  // namespace

StatusOr<std::shared_ptr<const Grammar>> CompileToolCalls(
    const nlohmann::ordered_json& tools, const std::optional<std::string>& only_name,
    bool parallel) {
  try {
    return Compile(tools, only_name, parallel);
  } catch (const std::exception& e) {  // nlohmann throws on surprising shapes
    return InvalidArgument(std::string("tools: ") + e.what());
  }
}

}  // namespace g4::grammar
