// Grammar-constrained decoding: a JSON Schema (response_format) or a set of tool declarations
// (Gemma 4's "<|tool_call>call:NAME{...}<tool_call|>" syntax) compiled once per request into an
// immutable Grammar; a GrammarMatcher per sequence walks it symbol by symbol and, before each
// sampling step, marks which tokens of the whole vocabulary keep the output a valid prefix.
//
// Symbols: bytes 0-255, plus the Gemma 4 control tokens the tool syntax writes (kSymQuote for
// <|"|>, kSymToolCallStart, kSymToolCallEnd), each a single symbol. A token is the symbol string
// it decodes to (byte-fallback <0xNN> tokens are one byte, so a multi-byte UTF-8 character may
// be split across tokens); any other control token is never allowed by a grammar. The end ids
// (eos, end of turn, <|tool_response>) are allowed exactly when the grammar has accepted a
// whole value.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace g4 {
class Tokenizer;
}

namespace g4::grammar {

inline constexpr int kSymQuote = 256;          // <|"|>: Gemma tool-syntax string delimiter
inline constexpr int kSymToolCallStart = 257;  // <|tool_call>
inline constexpr int kSymToolCallEnd = 258;    // <tool_call|>
inline constexpr int kNumSymbols = 259;

struct Grammar;  // compiled, immutable; shared by every matcher of a request

// JSON Schema -> grammar for response_format json_schema. Supported: type (each JSON type, or
// an array of them), properties, required, additionalProperties (false, true or a schema),
// enum, const, items, minItems/maxItems, minLength/maxLength, integer minimum/maximum
// (exclusive forms too), anyOf/oneOf (oneOf is generated as anyOf), $ref to "#", "#/$defs/x"
// or "#/definitions/x", nested objects, unicode strings and escapes; annotations (title,
// description, default, examples, $schema, $id, $comment) are ignored. Any other keyword is
// InvalidArgument naming it and its path ("<where>.properties.age: keyword 'multipleOf' is not
// supported"), never ignored. Objects are written with their declared properties in declared
// order (required ones always, optional ones may be left out); whitespace between tokens is
// bounded. `where` prefixes error messages (e.g. "response_format.json_schema.schema").
// Details: no whitespace before or after the value; between tokens at most one '\n' and 20
// spaces/tabs. Numbers have at most 15 integer, 15 fraction and 2 exponent digits (always a
// finite double); integers at most 18 digits. Next to `properties`, additionalProperties true
// or a schema is honoured as false (only declared properties are written; still valid). The
// schema is an ordered_json so that "declared order" is the order the client wrote (a plain
// nlohmann::json sorts its keys: parse request bodies with ordered_json). Nesting (recursive
// $ref, free-form values) is bounded at about 30 levels.
StatusOr<std::shared_ptr<const Grammar>> CompileJsonSchema(const nlohmann::ordered_json& schema,
                                                           std::string_view where);

// Any JSON object (response_format json_object).
std::shared_ptr<const Grammar> JsonObjectGrammar();

// Gemma 4 tool calls: "<|tool_call>call:NAME{args}<tool_call|>", where NAME is one of `tools`
// (OpenAI tools: [{"type": "function", "function": {"name", "parameters"}}]), or only
// `only_name` when set, and args are that tool's parameters in Gemma's value syntax (keys bare,
// strings between <|"|> symbols, no escapes). Exactly as tool_syntax::FormatValue(args, false)
// writes them: keys in case-insensitive sorted order, null as None, no whitespace; a string
// never contains "<|\"|>" as text. Parameters absent or {}: any object (bare identifier keys).
// With `parallel`, one or more calls in a row (at most 64);
// otherwise exactly one. InvalidArgument naming "tools[i].function.parameters..." for a schema
// keyword that is not supported, or "tool_choice" for an unknown only_name.
StatusOr<std::shared_ptr<const Grammar>> CompileToolCalls(
    const nlohmann::ordered_json& tools, const std::optional<std::string>& only_name,
    bool parallel);

// The symbol strings of a tokenizer's vocabulary, arranged for mask computation (a trie over
// token symbols and precomputed sets). Built once per tokenizer (tens of ms at 262,144 tokens)
// and shared by every matcher. Gemma's placeholder added tokens ("<unusedN>", "<mask>",
// "[multimodal]") count as control tokens: never allowed.
class VocabIndex {
 public:
  static std::shared_ptr<const VocabIndex> Build(const Tokenizer& tokenizer);
  ~VocabIndex();
  int32_t vocab_size() const;
  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

// Per-sequence state (not thread-safe; cheap to create).
class GrammarMatcher {
 public:
  // `end_ids`: the ids that end generation (allowed once the grammar is complete). `vocab` may be
  // null when only AcceptSymbols is used (FillMask then allows nothing).
  GrammarMatcher(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const VocabIndex> vocab,
                 std::vector<int32_t> end_ids);
  ~GrammarMatcher();
  GrammarMatcher(GrammarMatcher&&) noexcept;
  GrammarMatcher& operator=(GrammarMatcher&&) noexcept;

  // allowed[id] = 1 for every token that keeps the output a valid prefix (end ids when
  // complete), 0 otherwise. `allowed` has vocab_size entries.
  void FillMask(std::span<uint8_t> allowed);
  // Advances over a token. False (state unchanged) if the token is not allowed.
  bool Accept(int32_t token);
  // Advances over text symbols directly (tests, and a forced prefix). False if rejected
  // (state unchanged).
  bool AcceptSymbols(std::span<const int> symbols);
  // A whole value has been accepted: the end ids are allowed now.
  bool IsComplete() const;
  // Complete and no further symbol is possible: only the end ids are allowed.
  bool IsTerminated() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace g4::grammar
