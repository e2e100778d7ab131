#include "server/openai/json_utf8.h"

#include <vector>

#include "tokenizer/utf8.h"

namespace g4::openai {

std::optional<size_t> FirstInvalidUtf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      ++i;
      continue;
    }
    const size_t len = utf8::DecodeOne(text.substr(i));
    if (len == 0) return i;
    i += len;
  }
  return std::nullopt;
}

namespace {

// One open container while scanning: the path up to it, and for arrays the current index,
// for objects the last key read.
struct Frame {
  bool object = false;
  size_t index = 0;
  std::string key;
  bool expect_key = false;  // objects: the next string is a key
};

std::string Join(const std::vector<Frame>& stack) {
  std::string path;
  for (const Frame& f : stack) {
    if (f.object) {
      constexpr size_t kMaxKey = 64;  // keys are client text: keep the message short
      if (!path.empty()) path += '.';
      path += f.key.size() > kMaxKey ? f.key.substr(0, kMaxKey) + "..." : f.key;
    } else {
      path += "[" + std::to_string(f.index) + "]";
    }
  }
  return path;
}

}  // namespace

std::optional<Utf8Fault> FindUtf8Fault(std::string_view body) {
  const std::optional<size_t> bad = FirstInvalidUtf8(body);
  if (!bad) return std::nullopt;
  Utf8Fault fault;
  fault.offset = *bad;
  std::vector<Frame> stack;
  bool in_string = false, escaped = false, string_is_key = false;
  size_t string_start = 0;
  for (size_t i = 0; i < *bad; ++i) {
    const char c = body[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
        if (string_is_key) stack.back().key.assign(body.substr(string_start, i - string_start));
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        string_start = i + 1;
        string_is_key = !stack.empty() && stack.back().object && stack.back().expect_key;
        if (string_is_key) stack.back().expect_key = false;
        break;
      case '{':
        stack.push_back({true, 0, "", true});
        break;
      case '[':
        stack.push_back({false, 0, "", false});
        break;
      case '}':
      case ']':
        if (!stack.empty()) stack.pop_back();
        break;
      case ',':
        if (!stack.empty()) {
          if (stack.back().object) {
            stack.back().expect_key = true;
          } else {
            ++stack.back().index;
          }
        }
        break;
      default:
        break;
    }
  }
  if (!in_string) return fault;  // raw bytes between tokens: the parser's position is as good
  if (string_is_key) {
    fault.in_key = true;
    stack.pop_back();  // the key itself is unreadable: name the object holding it
  }
  fault.path = Join(stack);
  return fault;
}

}  // namespace g4::openai
