// JSON Schema -> grammar nodes, in either value dialect. One SchemaCompiler per schema document
// (its "#" for $ref); several may add nodes to the same Grammar (one per tool).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "runtime/grammar/grammar_internal.h"
#include "runtime/grammar/grammar_nodes.h"

namespace g4::grammar {

class SchemaCompiler {
 public:
  // `doc` is the document "#" refers to; `where` prefixes error paths.
  SchemaCompiler(Grammar* g, Dialect dialect, const nlohmann::ordered_json& doc, std::string where)
      : g_(g), dialect_(dialect), doc_(doc), where_(std::move(where)) {}

  // The node for `schema` (at JSON path `path`, relative to `where`).
  StatusOr<int32_t> Compile(const nlohmann::ordered_json& schema, const std::string& path);

 private:
  Status Error(const std::string& path, const std::string& what) const;
  StatusOr<int32_t> CompileRef(const std::string& ref, const std::string& path);
  StatusOr<int32_t> CompileType(const nlohmann::ordered_json& s, const std::string& type,
                                const std::string& path);
  StatusOr<int32_t> CompileObject(const nlohmann::ordered_json& s, const std::string& path);
  StatusOr<int32_t> CompileArray(const nlohmann::ordered_json& s, const std::string& path);
  StatusOr<int32_t> CompileString(const nlohmann::ordered_json& s, const std::string& path);
  StatusOr<int32_t> CompileInteger(const nlohmann::ordered_json& s, const std::string& path);
  StatusOr<int32_t> CompileEnum(const nlohmann::ordered_json& values, const std::string& path);
  int32_t Literal(const nlohmann::ordered_json& value);

  Grammar* g_;
  Dialect dialect_;
  const nlohmann::ordered_json& doc_;
  std::string where_;
  std::map<std::string, int32_t> refs_;  // "$ref" text -> kRef node
  int depth_ = 0;                        // nesting of Compile calls (hostile schemas)
};

}  // namespace g4::grammar
