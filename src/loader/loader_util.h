// Small string helpers shared by the loader's .cc files (error-message formatting, paths).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>

namespace g4::loader_internal {

// 'name', for tensor and file names inside error messages. Built with appends rather than
// operator+ chains, which trip GCC 12's false -Wrestrict warning.
inline std::string Quoted(std::string_view s) {
  std::string q;
  q.reserve(s.size() + 2);
  q += '\'';
  q += s;
  q += '\'';
  return q;
}

// "[begin,end)"
inline std::string ByteRange(uint64_t begin, uint64_t end) {
  std::string r = "[";
  r += std::to_string(begin);
  r += ',';
  r += std::to_string(end);
  r += ')';
  return r;
}

inline std::string JoinPath(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  std::string p = dir;
  if (p.back() != '/') p += '/';
  p += name;
  return p;
}

// Thread-safe strerror.
inline std::string ErrnoText(int err) {
  return std::error_code(err, std::generic_category()).message();
}

}  // namespace g4::loader_internal
