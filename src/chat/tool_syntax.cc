// Gemma 4 tool syntax: writer mirroring the chat template's macros, and a forgiving reader.
#include "chat/tool_syntax.h"

#include <algorithm>
#include <cctype>
#include <vector>

#include "tokenizer/utf8.h"

namespace g4::tool_syntax {
namespace {

using json = nlohmann::json;

// Jinja truthiness: undefined/null false; empty strings, arrays and objects false; 0 false.
bool Truthy(const json* v) {
  if (v == nullptr || v->is_null()) return false;
  if (v->is_boolean()) return v->get<bool>();
  if (v->is_number()) return v->get<double>() != 0.0;
  if (v->is_string()) return !v->get_ref<const std::string&>().empty();
  return !v->empty();
}

const json* Get(const json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  const auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

// What {{ x }} prints for a value: a string as is, anything else as JSON.
std::string Str(const json* v) {
  if (v == nullptr || v->is_null()) return "";
  if (v->is_string()) return v->get<std::string>();
  return v->dump();
}

std::string Upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// `x | upper` on a JSON Schema type: a string upper-cased; a list prints as Python would
// (['STRING', 'NULL']) because Jinja upper-cases the list's string form.
std::string UpperType(const json* t) {
  if (t == nullptr || t->is_null()) return "";
  if (t->is_string()) return Upper(t->get<std::string>());
  if (t->is_array()) {
    std::string r = "[";
    for (size_t i = 0; i < t->size(); ++i) {
      if (i) r += ", ";
      r += "'" + Upper(Str(&(*t)[i])) + "'";
    }
    return r + "]";
  }
  return Upper(t->dump());
}

// Jinja's dictsort: keys ordered case-insensitively.
std::vector<std::string> SortedKeys(const json& obj) {
  std::vector<std::string> keys;
  for (auto it = obj.begin(); it != obj.end(); ++it) keys.push_back(it.key());
  auto lower = [](const std::string& s) {
    std::string l = s;
    for (char& c : l) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return l;
  };
  std::stable_sort(keys.begin(), keys.end(),
                   [&](const std::string& a, const std::string& b) { return lower(a) < lower(b); });
  return keys;
}

std::string QuotedList(const json* list) {
  std::string r;
  if (list == nullptr || !list->is_array()) return r;
  for (size_t i = 0; i < list->size(); ++i) {
    if (i) r += ',';
    r += std::string(kQuote) + Str(&(*list)[i]) + std::string(kQuote);
  }
  return r;
}

const json& EmptyObject() {
  static const json* empty = new json(json::object());
  return *empty;
}

// format_parameters(properties, required) of the chat template.
std::string FormatParameters(const json& properties) {
  static const char* kStandard[] = {"description", "type", "properties", "required", "nullable"};
  std::string out;
  bool found_first = false;
  for (const std::string& key : SortedKeys(properties)) {
    if (std::find(std::begin(kStandard), std::end(kStandard), key) != std::end(kStandard)) continue;
    const json& raw = properties[key];
    const json& value = raw.is_object() ? raw : EmptyObject();
    if (found_first) out += ',';
    found_first = true;
    out += key + ":{";
    bool add_comma = false;
    auto comma = [&] {
      if (add_comma) {
        out += ',';
      } else {
        add_comma = true;
      }
    };
    if (Truthy(Get(value, "description"))) {
      out += "description:" + std::string(kQuote) + Str(Get(value, "description")) +
             std::string(kQuote);
      add_comma = true;
    }
    const std::string type = UpperType(Get(value, "type"));
    if (type == "STRING") {
      if (Truthy(Get(value, "enum"))) {
        comma();
        out += "enum:" + FormatValue(*Get(value, "enum"), true);
      }
    } else if (type == "ARRAY") {
      const json* items = Get(value, "items");
      if (items != nullptr && items->is_object() && !items->empty()) {
        comma();
        out += "items:{";
        bool first_item = false;
        for (const std::string& ik : SortedKeys(*items)) {
          const json& iv = (*items)[ik];
          if (iv.is_null()) continue;
          if (first_item) out += ',';
          first_item = true;
          if (ik == "properties") {
            out += "properties:{" + (iv.is_object() ? FormatParameters(iv) : std::string()) + "}";
          } else if (ik == "required") {
            out += "required:[" + QuotedList(&iv) + "]";
          } else if (ik == "type") {
            if (iv.is_string()) {
              out += "type:" + FormatValue(json(Upper(iv.get<std::string>())), true);
            } else {
              json upper = json::array();
              if (iv.is_array()) {
                for (const json& t : iv) upper.push_back(Upper(Str(&t)));
              }
              out += "type:" + FormatValue(upper, true);
            }
          } else {
            out += ik + ":" + FormatValue(iv, true);
          }
        }
        out += '}';
      }
    }
    if (Truthy(Get(value, "nullable"))) {
      comma();
      out += "nullable:true";
    }
    if (type == "OBJECT") {
      const json* props = Get(value, "properties");
      comma();
      out += "properties:{" + FormatParameters(props && props->is_object() ? *props : value) + "}";
      if (Truthy(Get(value, "required"))) {
        comma();
        out += "required:[" + QuotedList(Get(value, "required")) + "]";
      }
    }
    comma();
    out += "type:" + std::string(kQuote) + type + std::string(kQuote) + "}";
  }
  return out;
}

bool IsPythonSpace(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 ||
         cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

// ---- reader ----

class Reader {
 public:
  Reader(std::string_view text, size_t pos) : t_(text), p_(pos) {}
  size_t pos() const { return p_; }

  nlohmann::ordered_json Value(int depth) {
    SkipWs();
    if (p_ >= t_.size()) return nullptr;
    if (StartsWith(kQuote)) return QuoteToken();
    const char c = t_[p_];
    if (c == '"' || c == '\'') return Quoted(c);
    if (depth < 64 && c == '{') return Object(depth);
    if (depth < 64 && c == '[') return Array(depth);
    return Bare();
  }

 private:
  bool StartsWith(std::string_view s) const { return t_.substr(p_, s.size()) == s; }
  void SkipWs() {
    while (p_ < t_.size() && std::isspace(static_cast<unsigned char>(t_[p_]))) ++p_;
  }

  std::string QuoteToken() {
    p_ += kQuote.size();
    const size_t end = t_.find(kQuote, p_);
    std::string s(t_.substr(p_, end == std::string_view::npos ? std::string_view::npos : end - p_));
    p_ = end == std::string_view::npos ? t_.size() : end + kQuote.size();
    return s;
  }

  // "..." with JSON escapes, or '...' with backslash escapes; ends at the end of the text if the
  // closing quote is missing.
  std::string Quoted(char q) {
    ++p_;
    std::string s;
    while (p_ < t_.size() && t_[p_] != q) {
      if (t_[p_] == '\\' && p_ + 1 < t_.size()) {
        const char e = t_[p_ + 1];
        p_ += 2;
        switch (e) {
          case 'n': s += '\n'; break;
          case 't': s += '\t'; break;
          case 'r': s += '\r'; break;
          case 'b': s += '\b'; break;
          case 'f': s += '\f'; break;
          case 'u': {
            uint32_t cp = 0;
            size_t k = 0;
            for (; k < 4 && p_ + k < t_.size(); ++k) {
              const char h = t_[p_ + k];
              const int v = h >= '0' && h <= '9'   ? h - '0'
                            : h >= 'a' && h <= 'f' ? h - 'a' + 10
                            : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                                   : -1;
              if (v < 0) break;
              cp = cp * 16 + static_cast<uint32_t>(v);
            }
            p_ += k;
            if (k == 4 && !(cp >= 0xD800 && cp <= 0xDFFF)) {
              utf8::Append(cp, &s);
            } else {
              s += "\xEF\xBF\xBD";
            }
            break;
          }
          default: s += e;
        }
        continue;
      }
      s += t_[p_++];
    }
    if (p_ < t_.size()) ++p_;
    return s;
  }

  nlohmann::ordered_json Object(int depth) {
    ++p_;  // '{'
    nlohmann::ordered_json obj = nlohmann::ordered_json::object();
    while (true) {
      SkipWs();
      if (p_ >= t_.size()) return obj;
      if (t_[p_] == '}') {
        ++p_;
        return obj;
      }
      if (t_[p_] == ',') {
        ++p_;
        continue;
      }
      const size_t before = p_;
      std::string key;
      if (StartsWith(kQuote)) {
        key = QuoteToken();
      } else if (t_[p_] == '"' || t_[p_] == '\'') {
        key = Quoted(t_[p_]);
      } else {
        const size_t end = t_.find_first_of(":,}", p_);
        const size_t stop = end == std::string_view::npos ? t_.size() : end;
        key = std::string(Trim(t_.substr(p_, stop - p_)));
        p_ = stop;
      }
      SkipWs();
      if (p_ < t_.size() && (t_[p_] == ':' || t_[p_] == '=')) {
        ++p_;
        obj[key] = Value(depth + 1);
      } else if (!key.empty()) {
        obj[key] = nullptr;  // a key without a value
      }
      if (p_ == before) ++p_;  // never loop without progress
    }
  }

  nlohmann::ordered_json Array(int depth) {
    ++p_;  // '['
    nlohmann::ordered_json arr = nlohmann::ordered_json::array();
    while (true) {
      SkipWs();
      if (p_ >= t_.size()) return arr;
      if (t_[p_] == ']') {
        ++p_;
        return arr;
      }
      if (t_[p_] == ',') {
        ++p_;
        continue;
      }
      const size_t before = p_;
      arr.push_back(Value(depth + 1));
      if (p_ == before) ++p_;
    }
  }

  // A bare word up to the next ',', '}' or ']': a literal, a number, or else a string.
  nlohmann::ordered_json Bare() {
    const size_t end = t_.find_first_of(",}]", p_);
    const size_t stop = end == std::string_view::npos ? t_.size() : end;
    const std::string word(Trim(t_.substr(p_, stop - p_)));
    p_ = stop;
    if (word == "true" || word == "True") return true;
    if (word == "false" || word == "False") return false;
    if (word == "null" || word == "None" || word == "none") return nullptr;
    if (!word.empty() && (std::isdigit(static_cast<unsigned char>(word[0])) || word[0] == '-')) {
      const auto parsed = nlohmann::ordered_json::parse(word, nullptr, /*allow_exceptions=*/false);
      if (!parsed.is_discarded() && parsed.is_number()) return parsed;
    }
    return word;
  }

  std::string_view t_;
  size_t p_;
};

}  // namespace

std::string_view Trim(std::string_view s) {
  while (!s.empty()) {
    uint32_t cp = 0;
    const size_t n = utf8::DecodeOne(s, &cp);
    if (n == 0 || !IsPythonSpace(cp)) break;
    s.remove_prefix(n);
  }
  while (!s.empty()) {
    size_t b = s.size() - 1;
    while (b > 0 && (static_cast<uint8_t>(s[b]) & 0xC0) == 0x80 && s.size() - b < 4) --b;
    uint32_t cp = 0;
    const size_t n = utf8::DecodeOne(s.substr(b), &cp);
    if (n != s.size() - b || !IsPythonSpace(cp)) break;
    s.remove_suffix(n);
  }
  return s;
}

std::string FormatValue(const json& v, bool quote_keys) {
  if (v.is_string()) return std::string(kQuote) + v.get<std::string>() + std::string(kQuote);
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_null()) return "None";  // what Jinja prints for Python's None
  if (v.is_object()) {
    std::string out = "{";
    bool first = true;
    for (const std::string& k : SortedKeys(v)) {
      if (!first) out += ',';
      first = false;
      out += quote_keys ? std::string(kQuote) + k + std::string(kQuote) : k;
      out += ':';
      out += FormatValue(v[k], quote_keys);
    }
    return out + "}";
  }
  if (v.is_array()) {
    std::string out = "[";
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) out += ',';
      out += FormatValue(v[i], quote_keys);
    }
    return out + "]";
  }
  return v.dump();
}

std::string FormatDeclaration(const json& tool) {
  const json* f = Get(tool, "function");
  const json& fn = f != nullptr && f->is_object() ? *f : tool;
  std::string out = "declaration:" + Str(Get(fn, "name")) + "{description:" + std::string(kQuote) +
                    Str(Get(fn, "description")) + std::string(kQuote);
  const json* params = Get(fn, "parameters");
  if (Truthy(params) && params->is_object()) {
    out += ",parameters:{";
    const json* props = Get(*params, "properties");
    if (Truthy(props) && props->is_object()) out += "properties:{" + FormatParameters(*props) + "},";
    if (Truthy(Get(*params, "required"))) {
      out += "required:[" + QuotedList(Get(*params, "required")) + "],";
    }
    if (Truthy(Get(*params, "type"))) {
      out += "type:" + std::string(kQuote) + UpperType(Get(*params, "type")) +
             std::string(kQuote) + "}";
    }
  }
  if (const json* r = Get(fn, "response")) {
    out += ",response:{";
    if (Truthy(Get(*r, "description"))) {
      out += "description:" + std::string(kQuote) + Str(Get(*r, "description")) +
             std::string(kQuote) + ",";
    }
    if (UpperType(Get(*r, "type")) == "OBJECT") {
      out += "type:" + std::string(kQuote) + "OBJECT" + std::string(kQuote) + "}";
    }
  }
  out += "}";
  return std::string(Trim(out));
}

std::string FormatResponse(std::string_view name, const json& response) {
  std::string out = "response:" + std::string(name) + "{";
  if (response.is_object()) {
    bool first = true;
    for (const std::string& k : SortedKeys(response)) {
      if (!first) out += ',';
      first = false;
      out += k + ":" + FormatValue(response[k], false);
    }
  } else {
    out += "value:" + FormatValue(response, false);
  }
  return out + "}";
}

nlohmann::ordered_json ParseValue(std::string_view text, size_t* pos) {
  Reader r(text, *pos);
  nlohmann::ordered_json v = r.Value(0);
  *pos = r.pos();
  return v;
}

}  // namespace g4::tool_syntax
