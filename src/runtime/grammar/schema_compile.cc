// JSON Schema -> grammar nodes. Every keyword is either enforced exactly, an annotation, or
// refused with its path: a constraint silently ignored would let the model break the schema.
#include "runtime/grammar/schema_compile.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

#include "chat/tool_syntax.h"

namespace g4::grammar {
namespace {

using json = nlohmann::ordered_json;

constexpr int64_t kIntLimit = 999'999'999'999'999'999;  // kMaxIntegerDigits nines
constexpr int kMaxSchemaDepth = 64;

const std::set<std::string_view>& Annotations() {
  static const auto* s = new std::set<std::string_view>{
      "title", "description", "default", "examples", "$schema", "$id", "$comment",
      "deprecated", "readOnly", "writeOnly", "$defs", "definitions"};
  return *s;
}

const std::set<std::string_view>& Constraints() {
  static const auto* s = new std::set<std::string_view>{
      "type", "properties", "required", "additionalProperties", "enum", "const", "items",
      "minItems", "maxItems", "minLength", "maxLength", "minimum", "maximum",
      "exclusiveMinimum", "exclusiveMaximum", "anyOf", "oneOf", "allOf", "$ref", "nullable"};
  return *s;
}

bool Has(const json& s, const char* key) { return s.contains(key); }

// Whether `type` (a name or a list of names) admits the value `v`.
bool TypeAdmits(const json& type, const json& v) {
  if (type.is_array()) {
    for (const json& t : type) {
      if (TypeAdmits(t, v)) return true;
    }
    return false;
  }
  if (!type.is_string()) return true;
  const std::string t = type.get<std::string>();
  if (t == "integer") {
    return v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) ==
                                                                v.get<double>());
  }
  return (t == "number" && v.is_number()) || (t == "string" && v.is_string()) ||
         (t == "boolean" && v.is_boolean()) || (t == "null" && v.is_null()) ||
         (t == "object" && v.is_object()) || (t == "array" && v.is_array());
}

}  // namespace

Status SchemaCompiler::Error(const std::string& path, const std::string& what) const {
  return InvalidArgument(where_ + path + ": " + what);
}

int32_t SchemaCompiler::Literal(const json& value) {
  const std::string text = dialect_ == Dialect::kJson
                               ? value.dump()
                               : tool_syntax::FormatValue(value, /*quote_keys=*/false);
  return AddLiteral(g_, TextSymbols(text, dialect_), dialect_);
}

StatusOr<int32_t> SchemaCompiler::Compile(const json& s, const std::string& path) {
  struct DepthGuard {
    int* d;
    ~DepthGuard() { --*d; }
  } guard{&depth_};
  if (++depth_ > kMaxSchemaDepth) return Error(path, "the schema nests too deeply");
  if (s.is_boolean()) {
    if (s.get<bool>()) return AnyValue(g_, dialect_);
    return Error(path, "schema 'false' can never be satisfied");
  }
  if (!s.is_object()) return Error(path, "a schema must be an object or a boolean");
  bool constrained = false;
  for (auto it = s.begin(); it != s.end(); ++it) {
    if (Constraints().count(it.key())) {
      constrained = true;
    } else if (!Annotations().count(it.key())) {
      return Error(path, "keyword '" + it.key() + "' is not supported");
    }
  }
  if (!constrained) return AnyValue(g_, dialect_);
  // Combinators stand alone: mixing them with sibling constraints would need an intersection.
  for (const char* comb : {"$ref", "anyOf", "oneOf", "allOf"}) {
    if (!Has(s, comb)) continue;
    for (auto it = s.begin(); it != s.end(); ++it) {
      if (it.key() != comb && it.key() != "nullable" && Constraints().count(it.key())) {
        return Error(path, "keyword '" + it.key() + "' next to '" + comb + "' is not supported");
      }
    }
  }
  StatusOr<int32_t> result = Status(StatusCode::kInternal, "unset");
  if (Has(s, "$ref")) {
    if (!s["$ref"].is_string()) return Error(path, "'$ref' must be a string");
    result = CompileRef(s["$ref"].get<std::string>(), path);
  } else if (Has(s, "allOf")) {
    const json& a = s["allOf"];
    if (!a.is_array() || a.size() != 1) {
      return Error(path, "keyword 'allOf' is not supported (only with a single schema)");
    }
    result = Compile(a[0], path + ".allOf[0]");
  } else if (Has(s, "anyOf") || Has(s, "oneOf")) {
    // oneOf is generated as anyOf: exclusivity cannot be checked on a prefix, and the schemas
    // people write make their alternatives disjoint anyway.
    const char* key = Has(s, "anyOf") ? "anyOf" : "oneOf";
    const json& a = s[key];
    if (!a.is_array() || a.empty()) return Error(path, std::string("'") + key + "' must be a "
                                                       "non-empty array");
    std::vector<int32_t> opts;
    for (size_t i = 0; i < a.size(); ++i) {
      G4_ASSIGN_OR_RETURN(int32_t o, Compile(a[i], path + "." + key + "[" +
                                                       std::to_string(i) + "]"));
      opts.push_back(o);
    }
    result = AddAlt(g_, std::move(opts));
  } else if (Has(s, "enum") || Has(s, "const")) {
    // The values are the constraint; a sibling `type` only filters them.
    json values = Has(s, "enum") ? s["enum"] : json::array({s["const"]});
    if (Has(s, "enum") && Has(s, "const")) values = json::array({s["const"]});
    if (values.is_array() && Has(s, "type")) {
      json kept = json::array();
      for (const json& v : values) {
        if (TypeAdmits(s["type"], v)) kept.push_back(v);
      }
      values = std::move(kept);
    }
    result = CompileEnum(values, path);
  } else {
    std::vector<std::string> types;
    if (Has(s, "type")) {
      const json& t = s["type"];
      if (t.is_string()) {
        types.push_back(t.get<std::string>());
      } else if (t.is_array() && !t.empty()) {
        for (const json& e : t) {
          if (!e.is_string()) return Error(path, "'type' entries must be strings");
          if (std::find(types.begin(), types.end(), e.get<std::string>()) == types.end()) {
            types.push_back(e.get<std::string>());
          }
        }
      } else {
        return Error(path, "'type' must be a string or a non-empty array of strings");
      }
    } else if (Has(s, "properties") || Has(s, "required") || Has(s, "additionalProperties")) {
      types.push_back("object");
    } else if (Has(s, "items") || Has(s, "minItems") || Has(s, "maxItems")) {
      types.push_back("array");
    } else if (Has(s, "minLength") || Has(s, "maxLength")) {
      types.push_back("string");
    } else {
      types.push_back("number");
    }
    std::vector<int32_t> opts;
    for (const std::string& t : types) {
      G4_ASSIGN_OR_RETURN(int32_t o, CompileType(s, t, path));
      opts.push_back(o);
    }
    result = AddAlt(g_, std::move(opts));
  }
  if (!result.ok()) return result;
  if (Has(s, "nullable") && s["nullable"].is_boolean() && s["nullable"].get<bool>()) {
    return AddAlt(g_, {*result, Literal(nullptr)});
  }
  return result;
}

StatusOr<int32_t> SchemaCompiler::CompileRef(const std::string& ref, const std::string& path) {
  if (auto it = refs_.find(ref); it != refs_.end()) return it->second;
  const json* target = nullptr;
  if (ref == "#") {
    target = &doc_;
  } else {
    for (const char* prefix : {"#/$defs/", "#/definitions/"}) {
      const std::string p = prefix;
      if (ref.compare(0, p.size(), p) != 0) continue;
      const std::string container = p.substr(2, p.size() - 3);
      const std::string name = ref.substr(p.size());
      if (doc_.is_object() && doc_.contains(container) && doc_[container].is_object() &&
          doc_[container].contains(name)) {
        target = &doc_[container][name];
      }
    }
  }
  if (target == nullptr) {
    return Error(path, "'$ref' " + ref + " does not name \"#\", \"#/$defs/x\" or "
                       "\"#/definitions/x\" of this schema");
  }
  // The kRef node exists before its target is compiled, so a recursive $ref finds it.
  Node n;
  n.kind = NodeKind::kRef;
  const int32_t id = AddNode(g_, std::move(n));
  refs_[ref] = id;
  std::string tpath;  // "#/$defs/x" -> ".$defs/x"
  if (ref != "#") tpath.append(".").append(ref, 2, std::string::npos);
  G4_ASSIGN_OR_RETURN(int32_t t, Compile(*target, tpath));
  g_->nodes[id].children = {t};
  return id;
}

StatusOr<int32_t> SchemaCompiler::CompileType(const json& s, const std::string& type,
                                              const std::string& path) {
  if (type == "object") return CompileObject(s, path);
  if (type == "array") return CompileArray(s, path);
  if (type == "string") return CompileString(s, path);
  if (type == "integer") return CompileInteger(s, path);
  if (type == "number") {
    for (const char* k : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
      if (Has(s, k)) {
        return Error(path, std::string("keyword '") + k + "' is not supported for type "
                           "'number' (only for 'integer')");
      }
    }
    Node n;
    n.kind = NodeKind::kNumber;
    n.dialect = dialect_;
    return AddNode(g_, std::move(n));
  }
  if (type == "boolean") return AddAlt(g_, {Literal(true), Literal(false)});
  if (type == "null") return Literal(nullptr);
  return Error(path, "unknown type '" + type + "'");
}

static Status GetCount(const json& s, const char* key, int64_t* out, const std::string& where) {
  if (!s.contains(key)) return Status::Ok();
  const json& v = s[key];
  if (!v.is_number_integer() || v.get<int64_t>() < 0) {
    return InvalidArgument(where + ": '" + key + "' must be a non-negative integer");
  }
  *out = std::min<int64_t>(v.get<int64_t>(), kUnbounded);
  return Status::Ok();
}

StatusOr<int32_t> SchemaCompiler::CompileObject(const json& s, const std::string& path) {
  const json* props = Has(s, "properties") ? &s["properties"] : nullptr;
  if (props != nullptr && !props->is_object()) return Error(path, "'properties' must be an object");
  std::vector<std::string> required;
  if (Has(s, "required")) {
    if (!s["required"].is_array()) return Error(path, "'required' must be an array");
    for (const json& r : s["required"]) {
      if (!r.is_string()) return Error(path, "'required' entries must be strings");
      required.push_back(r.get<std::string>());
    }
  }
  const json* additional = Has(s, "additionalProperties") ? &s["additionalProperties"] : nullptr;
  const bool closed = additional != nullptr && additional->is_boolean() && !additional->get<bool>();
  if (props == nullptr && !closed) {
    if (!required.empty()) {
      return Error(path, "keyword 'required' without 'properties' is not supported");
    }
    if (additional == nullptr) return AnyObject(g_, dialect_);
    G4_ASSIGN_OR_RETURN(int32_t v, Compile(*additional, path + ".additionalProperties"));
    return AddFreeObject(g_, dialect_, v);
  }
  // Declared properties only: an extra key (allowed by additionalProperties true or a schema)
  // is never written, which keeps every output valid without tracking duplicate keys.
  std::vector<std::string> names;
  if (props != nullptr) {
    for (auto it = props->begin(); it != props->end(); ++it) names.push_back(it.key());
  }
  if (dialect_ == Dialect::kGemma) {
    // tool_syntax::FormatValue writes keys in Jinja dictsort order (case-insensitive).
    auto lower = [](std::string v) {
      for (char& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      return v;
    };
    std::stable_sort(names.begin(), names.end(), [&](const std::string& a, const std::string& b) {
      return lower(a) < lower(b);
    });
  }
  for (const std::string& r : required) {
    if (std::find(names.begin(), names.end(), r) == names.end()) {
      return Error(path, "required property '" + r + "' is not declared in 'properties'");
    }
  }
  Node n;
  n.kind = NodeKind::kObject;
  n.dialect = dialect_;
  for (const std::string& name : names) {
    // Gemma keys are bare: tool_syntax::ParseValue reads a key up to ':', ',' or '}'.
    if (dialect_ == Dialect::kGemma &&
        (name.empty() || name.find_first_of(":,{}[] \t\n\r<") != std::string::npos)) {
      return Error(path + ".properties", "property name '" + name +
                                            "' cannot be written as a bare key in Gemma's tool "
                                            "syntax");
    }
    const bool req = std::find(required.begin(), required.end(), name) != required.end();
    const json& ps = (*props)[name];
    if (ps.is_boolean() && !ps.get<bool>()) {
      if (req) return Error(path + ".properties." + name, "schema 'false' is required");
      continue;  // can never appear: never written
    }
    G4_ASSIGN_OR_RETURN(int32_t v, Compile(ps, path + ".properties." + name));
    const std::string key = dialect_ == Dialect::kJson ? json(name).dump() : name;
    const int32_t k = AddLiteral(g_, TextSymbols(key, Dialect::kJson), dialect_);
    if (req) n.last_required = static_cast<int32_t>(n.props.size());
    n.props.push_back(Prop{k, v, req});
  }
  return AddNode(g_, std::move(n));
}

StatusOr<int32_t> SchemaCompiler::CompileArray(const json& s, const std::string& path) {
  int32_t item;
  if (!Has(s, "items")) {
    item = AnyValue(g_, dialect_);
  } else if (s["items"].is_array()) {
    return Error(path, "keyword 'items' as an array (tuple) is not supported");
  } else {
    G4_ASSIGN_OR_RETURN(item, Compile(s["items"], path + ".items"));
  }
  int64_t min = 0, max = kUnbounded;
  G4_RETURN_IF_ERROR(GetCount(s, "minItems", &min, where_ + path));
  G4_RETURN_IF_ERROR(GetCount(s, "maxItems", &max, where_ + path));
  if (min > max) return Error(path, "minItems > maxItems can never be satisfied");
  Node n;
  n.kind = NodeKind::kArray;
  n.dialect = dialect_;
  n.children = {item};
  n.min = min;
  n.max = max;
  return AddNode(g_, std::move(n));
}

StatusOr<int32_t> SchemaCompiler::CompileString(const json& s, const std::string& path) {
  int64_t min = 0, max = kUnbounded;
  G4_RETURN_IF_ERROR(GetCount(s, "minLength", &min, where_ + path));
  G4_RETURN_IF_ERROR(GetCount(s, "maxLength", &max, where_ + path));
  if (min > max) return Error(path, "minLength > maxLength can never be satisfied");
  return AddString(g_, dialect_, min, max);
}

StatusOr<int32_t> SchemaCompiler::CompileInteger(const json& s, const std::string& path) {
  double lo = -static_cast<double>(kIntLimit), hi = static_cast<double>(kIntLimit);
  for (const char* k : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
    if (!Has(s, k)) continue;
    if (!s[k].is_number()) return Error(path, std::string("'") + k + "' must be a number");
    const double v = s[k].get<double>();
    const std::string key = k;
    if (key == "minimum") lo = std::max(lo, std::ceil(v));
    if (key == "exclusiveMinimum") lo = std::max(lo, std::floor(v) + 1);
    if (key == "maximum") hi = std::min(hi, std::floor(v));
    if (key == "exclusiveMaximum") hi = std::min(hi, std::ceil(v) - 1);
  }
  if (lo > hi) return Error(path, "the integer range is empty");
  Node n;
  n.kind = NodeKind::kInteger;
  n.dialect = dialect_;
  // |lo|, |hi| <= 1e18 here, so the conversions are exact enough and cannot overflow.
  n.min = std::max<int64_t>(static_cast<int64_t>(lo), -kIntLimit);
  n.max = std::min<int64_t>(static_cast<int64_t>(hi), kIntLimit);
  return AddNode(g_, std::move(n));
}

StatusOr<int32_t> SchemaCompiler::CompileEnum(const json& values, const std::string& path) {
  if (!values.is_array()) return Error(path, "'enum' must be an array");
  if (values.empty()) {
    return Error(path, "'enum' (or 'const') has no value of the given type: it can never be "
                       "satisfied");
  }
  // A sorted set rather than an Alt: the values consistent with a prefix are a contiguous
  // range, so matching stays one stack however long the enum is.
  Node n;
  n.kind = NodeKind::kLiteralSet;
  n.dialect = dialect_;
  for (const json& v : values) {
    const std::string text = dialect_ == Dialect::kJson
                                 ? v.dump()
                                 : tool_syntax::FormatValue(v, /*quote_keys=*/false);
    n.literals.push_back(TextSymbols(text, dialect_));
  }
  std::sort(n.literals.begin(), n.literals.end());
  return AddNode(g_, std::move(n));
}

}  // namespace g4::grammar
