// JSON parsing without exceptions escaping: nlohmann throws on malformed input, so every
// parse here runs inside try/catch and the parser's message becomes a Status.
#include "loader/json_file.h"

#include <exception>
#include <memory>

#include "loader/mapped_file.h"

namespace g4 {
namespace {

// nlohmann's what() starts with "[json.exception.parse_error.101] "; the tag is noise for a
// user, so drop it.
std::string StripExceptionTag(const char* what) {
  std::string s(what);
  if (!s.empty() && s[0] == '[') {
    const size_t close = s.find("] ");
    if (close != std::string::npos) s.erase(0, close + 2);
  }
  return s;
}

}  // namespace

size_t JsonTooDeepAt(std::string_view text, int limit) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return i;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return std::string_view::npos;
}

StatusOr<nlohmann::json> ParseJson(std::string_view text, const std::string& what_for_messages,
                                   const nlohmann::json::parser_callback_t& callback) {
  const std::string prefix = what_for_messages + ": malformed JSON: ";
  if (const size_t at = JsonTooDeepAt(text, kMaxJsonFileDepth); at != std::string_view::npos) {
    return InvalidArgument(prefix + "at byte " + std::to_string(at) + ": nested deeper than " +
                           std::to_string(kMaxJsonFileDepth) + " levels");
  }
  try {
    return nlohmann::json::parse(text.begin(), text.end(), callback, /*allow_exceptions=*/true);
  } catch (const nlohmann::json::parse_error& e) {
    return InvalidArgument(prefix + "at byte " + std::to_string(e.byte) + ": " +
                           StripExceptionTag(e.what()));
  } catch (const nlohmann::json::exception& e) {  // e.g. number overflow (out_of_range.406)
    return InvalidArgument(prefix + StripExceptionTag(e.what()));
  } catch (const std::exception& e) {  // bad_alloc on absurd input
    return Internal(what_for_messages + ": JSON parsing failed: " + e.what());
  }
}

StatusOr<nlohmann::json> ParseJson(std::string_view text, const std::string& what_for_messages) {
  return ParseJson(text, what_for_messages, nullptr);
}

StatusOr<nlohmann::json> ReadJsonFile(const std::string& path) {
  G4_ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> file, MappedFile::Open(path));
  return ParseJson(file->bytes(), path);
}

}  // namespace g4
