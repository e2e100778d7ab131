// Locating ill-formed UTF-8 in a raw JSON request body. nlohmann's parser rejects such bytes
// with "parse error at line 1, column N", which tells a client nothing about which of its
// strings was broken; this cheap pre-scan (no allocation beyond the path, no recursion) names
// the field instead, e.g. "messages[1].content".
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace g4::openai {

struct Utf8Fault {
  size_t offset = 0;  // byte offset of the first ill-formed sequence
  std::string path;   // the field whose string holds it ("" when not inside a string value)
  bool in_key = false;  // the bytes are inside an object key, not a value
};

// Byte offset of the first ill-formed UTF-8 sequence of `text`, or nullopt when all is valid.
std::optional<size_t> FirstInvalidUtf8(std::string_view text);

// Nothing when `body` is valid UTF-8; else where the first bad bytes are. The path follows the
// FieldReader convention: keys joined by '.', array elements as [i]. Brackets are tracked
// without a stack of their own beyond the path (depth is bounded by the caller's pre-scan).
std::optional<Utf8Fault> FindUtf8Fault(std::string_view body);

}  // namespace g4::openai
