// SHA-256 (FIPS 180-4), streaming: g4 pull checks every LFS file it downloads against the
// sha256 the hub names it by (its blob's file name), without linking a crypto library.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace g4::hub {

class Sha256 {
 public:
  Sha256();
  void Update(const void* data, size_t n);
  void Update(std::string_view s) { Update(s.data(), s.size()); }
  // The digest as 64 lowercase hex digits; the object is spent afterwards.
  std::string HexDigest();

 private:
  void Block(const uint8_t* p);

  std::array<uint32_t, 8> h_;
  std::array<uint8_t, 64> buf_{};
  size_t buffered_ = 0;
  uint64_t length_ = 0;
};

// The sha256 of a whole file, read in chunks; an IoError names the file.
StatusOr<std::string> Sha256OfFile(const std::string& path);

}  // namespace g4::hub
