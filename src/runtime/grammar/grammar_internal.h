// The compiled form of a grammar: a graph of nodes (JSON value kinds, literals, alternations,
// sequences) that the matcher walks as a pushdown automaton, one frame per active node.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/grammar/grammar.h"

namespace g4::grammar {

enum class NodeKind : uint8_t {
  kLiteral,  // symbols, in order
  kAlt,      // one of children (anyOf, enum, type arrays); never empty, options never empty
  kRef,      // children[0], resolved lazily so that recursive $ref costs nothing until used
  kSeq,      // children in order
  kRepeat,   // children[0], min..max times
  kWs,       // JSON whitespace between tokens (bounded: see kMaxWsBlanks)
  kString,   // a string value or key, lengths in code points
  kNumber,   // a JSON number with bounded digit counts
  kInteger,  // a JSON integer in [min, max]
  kObject,   // declared properties in order, or any keys (any_keys)
  kArray,    // items children[0], min..max of them
  kBareKey,  // Gemma-syntax free object key: [A-Za-z_][A-Za-z0-9_]*, at most kMaxBareKey bytes
  // One of `literals` (sorted; an enum, or tool names): deterministic however many there are.
  // With `children` (parallel to literals), the matching literal's child follows it.
  kLiteralSet,
};

// Value syntax: JSON (response_format), or Gemma 4's tool syntax inside a tool call (bare keys,
// strings between <|"|> symbols with raw content, null written as None, no whitespace).
enum class Dialect : uint8_t { kJson, kGemma };

// A gap between JSON tokens: at most one '\n' and at most this many spaces/tabs, so a model can
// never pad forever.
inline constexpr int kMaxWsBlanks = 20;
inline constexpr int kMaxNumberIntDigits = 15;
inline constexpr int kMaxNumberFracDigits = 15;
inline constexpr int kMaxNumberExpDigits = 2;  // 1e99 at most: every number stays a finite double
inline constexpr int kMaxIntegerDigits = 18;  // every such value fits in int64
inline constexpr int kMaxBareKey = 64;

struct Prop {
  int32_t key;    // kLiteral node: "name" (JSON) or name (Gemma)
  int32_t value;  // value node
  bool required;
};

struct Node {
  NodeKind kind = NodeKind::kLiteral;
  Dialect dialect = Dialect::kJson;
  std::vector<int> symbols;        // kLiteral
  std::vector<std::vector<int>> literals;  // kLiteralSet, sorted
  std::vector<int32_t> children;   // see NodeKind
  std::vector<Prop> props;         // kObject
  bool any_keys = false;           // kObject: free keys (key_node) with values children[0]
  int32_t key_node = -1;           // kObject with any_keys
  int32_t last_required = -1;      // kObject: index of the last required property
  int64_t min = 0;                 // lengths, counts, integer bounds
  int64_t max = 0;
};

struct Grammar {
  std::vector<Node> nodes;
  int32_t root = -1;
  int32_t ws = -1;  // the kWs node (JSON dialect)
  int32_t any_value[2] = {-1, -1};   // AnyValue per dialect, built once
  int32_t any_object[2] = {-1, -1};  // AnyObject per dialect
};

}  // namespace g4::grammar
