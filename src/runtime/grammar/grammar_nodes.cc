// Building grammar nodes: literals, alternations, and the free-form JSON value of a dialect.
#include "runtime/grammar/grammar_nodes.h"

#include "chat/tool_syntax.h"

namespace g4::grammar {

std::vector<int> TextSymbols(std::string_view text, Dialect dialect) {
  std::vector<int> out;
  for (size_t i = 0; i < text.size();) {
    if (dialect == Dialect::kGemma && text.substr(i, tool_syntax::kQuote.size()) ==
                                          tool_syntax::kQuote) {
      out.push_back(kSymQuote);
      i += tool_syntax::kQuote.size();
    } else {
      out.push_back(static_cast<uint8_t>(text[i++]));
    }
  }
  return out;
}

int32_t AddNode(Grammar* g, Node node) {
  g->nodes.push_back(std::move(node));
  return static_cast<int32_t>(g->nodes.size() - 1);
}

int32_t AddLiteral(Grammar* g, std::vector<int> symbols, Dialect dialect) {
  Node n;
  n.kind = NodeKind::kLiteral;
  n.dialect = dialect;
  n.symbols = std::move(symbols);
  return AddNode(g, std::move(n));
}

int32_t AddAlt(Grammar* g, std::vector<int32_t> options) {
  if (options.size() == 1) return options[0];
  Node n;
  n.kind = NodeKind::kAlt;
  n.children = std::move(options);
  return AddNode(g, std::move(n));
}

int32_t WsNode(Grammar* g) {
  if (g->ws < 0) {
    Node n;
    n.kind = NodeKind::kWs;
    g->ws = AddNode(g, std::move(n));
  }
  return g->ws;
}

int32_t AddString(Grammar* g, Dialect d, int64_t min, int64_t max) {
  Node n;
  n.kind = NodeKind::kString;
  n.dialect = d;
  n.min = min;
  n.max = max;
  return AddNode(g, std::move(n));
}

int32_t AddFreeObject(Grammar* g, Dialect d, int32_t value) {
  Node n;
  n.kind = NodeKind::kObject;
  n.dialect = d;
  n.any_keys = true;
  n.children = {value};
  if (d == Dialect::kJson) {
    n.key_node = AddString(g, d, 0, kUnbounded);
  } else {
    Node k;
    k.kind = NodeKind::kBareKey;
    k.dialect = d;
    n.key_node = AddNode(g, std::move(k));
  }
  return AddNode(g, std::move(n));
}

int32_t AnyValue(Grammar* g, Dialect d) {
  const int di = static_cast<int>(d);
  if (g->any_value[di] >= 0) return g->any_value[di];
  WsNode(g);
  Node alt;
  alt.kind = NodeKind::kAlt;
  const int32_t id = AddNode(g, std::move(alt));
  g->any_value[di] = id;
  std::vector<int32_t> opts;
  opts.push_back(AddFreeObject(g, d, id));
  Node arr;
  arr.kind = NodeKind::kArray;
  arr.dialect = d;
  arr.children = {id};
  arr.max = kUnbounded;
  opts.push_back(AddNode(g, std::move(arr)));
  opts.push_back(AddString(g, d, 0, kUnbounded));
  Node num;
  num.kind = NodeKind::kNumber;
  num.dialect = d;
  opts.push_back(AddNode(g, std::move(num)));
  opts.push_back(AddLiteral(g, TextSymbols("true", d), d));
  opts.push_back(AddLiteral(g, TextSymbols("false", d), d));
  opts.push_back(AddLiteral(g, TextSymbols(d == Dialect::kJson ? "null" : "None", d), d));
  g->nodes[id].children = std::move(opts);
  return id;
}

int32_t AnyObject(Grammar* g, Dialect d) {
  const int di = static_cast<int>(d);
  if (g->any_object[di] < 0) g->any_object[di] = AddFreeObject(g, d, AnyValue(g, d));
  return g->any_object[di];
}

}  // namespace g4::grammar
