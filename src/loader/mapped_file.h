// MappedFile: a read-only memory map of a whole file. Checkpoint weights are used straight
// from the map, so loading costs no copy and only the pages a model touches become resident.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"

namespace g4 {

class MappedFile {
 public:
  // Maps `path` with PROT_READ / MAP_PRIVATE. NotFound if it does not exist, IoError for any
  // other failure (not a regular file, permission, mmap); messages name the path and the OS
  // reason. A 0-byte file maps to data() == nullptr, size() == 0.
  static StatusOr<std::unique_ptr<MappedFile>> Open(const std::string& path);

  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return static_cast<const uint8_t*>(addr_); }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  std::string_view bytes() const {
    return {reinterpret_cast<const char*>(data()), size_};
  }

 private:
  MappedFile(std::string path, void* addr, size_t size)
      : path_(std::move(path)), addr_(addr), size_(size) {}

  std::string path_;
  void* addr_;  // nullptr for an empty file (mmap rejects length 0)
  size_t size_;
};

}  // namespace g4
